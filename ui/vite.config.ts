/// <reference types="vitest/config" />
import { defineConfig } from "vite";

/**
 * The policy Tauri applies to the window, repeated on `vite preview` so the
 * browser tests fail on anything (inline script, inline style attribute,
 * external request) that the real window would block.
 */
const STRICT_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export default defineConfig({
  // Relative asset URLs work both from Tauri's custom protocol and from `vite preview`.
  base: "./",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // Tauri's CSP has no `data:` in img-src/font-src: never inline assets as data URLs.
    assetsInlineLimit: 0,
    // Keep the module-preload polyfill out: it is an inline-able helper we do not need.
    modulePreload: { polyfill: false },
  },
  preview: {
    headers: { "Content-Security-Policy": STRICT_CSP },
  },
  test: {
    environment: "jsdom",
    include: ["test/**/*.test.ts"],
    restoreMocks: true,
  },
});
