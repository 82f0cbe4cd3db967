/// <reference types="vitest/config" />
import { defineConfig } from "vite";
import tauriConf from "../tauri.conf.json";

/**
 * The policy Tauri applies to the window (`app.security.csp` in tauri.conf.json),
 * read from there and applied on `vite preview` too, so the browser tests fail on
 * anything (inline script, inline style attribute, external request) that the
 * real window would block, and the two can never disagree.
 */
function tauriCsp(): string {
  const csp: unknown = tauriConf.app.security.csp;
  if (typeof csp === "string") return csp;
  if (csp === null || typeof csp !== "object") throw new Error("tauri.conf.json has no app.security.csp");
  return Object.entries(csp as Record<string, string | string[]>)
    .map(([directive, sources]) => `${directive} ${Array.isArray(sources) ? sources.join(" ") : sources}`)
    .join("; ");
}

export default defineConfig({
  // Relative asset URLs work both from Tauri's custom protocol and from `vite preview`.
  base: "./",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // Tauri's CSP has no `data:` in font-src: never inline assets as data URLs.
    assetsInlineLimit: 0,
    // Keep the module-preload polyfill out: it is an inline-able helper we do not need.
    modulePreload: { polyfill: false },
  },
  preview: {
    headers: { "Content-Security-Policy": tauriCsp() },
  },
  test: {
    environment: "jsdom",
    include: ["test/**/*.test.ts"],
    restoreMocks: true,
  },
});
