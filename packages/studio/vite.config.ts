import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The app is served by `svc dev` from dist/app; dist/test holds the compiled unit tests.
export default defineConfig({
  plugins: [react()],
  base: "/",
  build: { outDir: "dist/app", emptyOutDir: true, sourcemap: true },
});
