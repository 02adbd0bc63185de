/**
 * EnvFeeder: one Durable Object per env worker instance (filled in with the env runtime).
 */
import { DurableObject } from "cloudflare:workers";
import type { Bindings } from "../api/bindings";

export class EnvFeeder extends DurableObject<Bindings> {}
