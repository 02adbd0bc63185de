import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./src/api/storage/schema/*.ts",
  out: "./drizzle",
});
