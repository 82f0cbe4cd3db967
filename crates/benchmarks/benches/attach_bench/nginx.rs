//! nginx in front of the same runtime, as the comparison every proxy row is set beside: one
//! worker, `proxy_pass` with the token in `proxy_set_header Authorization`, upstream keep-alive,
//! no buffering. Its configuration (which holds the token) is a 0600 file, never an argument.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::write_private;

/// Bound for waiting on nginx to listen (it has no readiness signal besides the socket).
const NGINX_START_TIMEOUT: Duration = Duration::from_secs(10);
/// How often its socket is probed meanwhile: nginx starts in a few ms, so this adds little to the
/// run and costs nothing measurable before the rows start.
const NGINX_PROBE_INTERVAL: Duration = Duration::from_millis(20);

/// Debian's nginx, the one every comparison runs.
pub const NGINX: &str = "/usr/sbin/nginx";

/// A running nginx; killed when dropped.
pub struct Nginx {
    pub child: tokio::process::Child,
    pub addr: SocketAddr,
    pub pid: u32,
}

/// Starts `/usr/sbin/nginx` proxying to `upstream`, or `None` if it is missing or does not
/// come up. `wrapper` (a counter such as `valgrind --tool=callgrind ...`) runs it if not empty.
pub async fn start_nginx(
    dir: &Path,
    upstream: SocketAddr,
    token: &str,
    wrapper: &[String],
) -> Option<Nginx> {
    let binary = Path::new(NGINX);
    if !binary.exists() {
        return None;
    }
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let d = dir.display();
    let conf = format!(
        r#"daemon off;
master_process off;
worker_processes 1;
error_log {d}/nginx-error.log warn;
pid {d}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  keepalive_requests 1000000;
  upstream runtime {{ server {upstream}; keepalive 32; keepalive_requests 1000000; }}
  map $http_upgrade $connection_upgrade {{ default upgrade; '' ''; }}
  server {{
    listen {addr};
    location / {{
      proxy_pass http://runtime;
      proxy_http_version 1.1;
      proxy_set_header Authorization "Bearer {token}";
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 1h;
    }}
  }}
}}
"#
    );
    let conf_path = dir.join("nginx.conf");
    write_private(&conf_path, &conf);
    // The pid file says nginx is up (below): not one an earlier nginx left in `dir`.
    let _ = std::fs::remove_file(dir.join("nginx.pid"));
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = tokio::process::Command::new(program);
            command.args(args).arg(binary);
            command
        }
        None => tokio::process::Command::new(binary),
    };
    let child = command
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&conf_path)
        .arg("-e")
        .arg(dir.join("nginx-error.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    // nginx offers no readiness signal besides its socket and its pid file (written just after
    // it opens the socket), so probe both (bounded). Under a wrapper the child is the wrapper,
    // and the pid file has nginx's own pid.
    let deadline = Instant::now() + NGINX_START_TIMEOUT;
    loop {
        let pid = std::fs::read_to_string(dir.join("nginx.pid"))
            .ok()
            .and_then(|pid| pid.trim().parse().ok());
        if let Some(pid) = pid {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return Some(Nginx { child, addr, pid });
            }
        }
        if Instant::now() > deadline {
            eprintln!("nginx did not start; see {d}/nginx-error.log");
            return None;
        }
        tokio::time::sleep(NGINX_PROBE_INTERVAL).await;
    }
}

impl Nginx {
    /// Stops nginx the way it stops cleanly (SIGTERM to nginx itself), so a counter wrapped
    /// around it writes its figures, and waits for the child to end.
    pub async fn stop(mut self) {
        let pid = rustix::process::Pid::from_raw(self.pid as i32).expect("nginx's pid");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let _ = self.child.wait().await;
    }
}
