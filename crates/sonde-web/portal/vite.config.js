// The portal's build: index.html and its hashed assets, written where
// crates/sonde-web/build.rs asks (SONDE_PORTAL_OUT, its OUT_DIR) or to
// dist/ when run by hand (`npm run build`).
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/',
  build: {
    outDir: process.env.SONDE_PORTAL_OUT || 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // Nothing inlined as data: URLs, so every asset is a hashed file the
    // agent serves with a long cache life.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: {
    // `npx vite` for work on the pages, against an agent on :8090.
    proxy: { '/api': 'http://[::1]:8090' },
  },
});
