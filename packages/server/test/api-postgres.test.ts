import { describe } from "node:test";
import { serverSuite } from "./suites/all.js";

describe("svc server on PostgreSQL", () => serverSuite("postgres"));
