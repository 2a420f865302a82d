/**
 * Nodes starting together (issue 11: "with several nodes starting at once exactly one migrates,
 * the others wait"): three server processes started at the same moment on one empty PostgreSQL
 * database all come up healthy, exactly one of them applies the migrations, and a node restarted
 * later (a rolling restart) finds nothing to migrate. On the SQLite-file cluster node 0 starts
 * first and migrates alone, so the same counts hold.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Cluster, logEvents, startCluster } from "../support/cluster.ts";
import { newUser } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, skipS3 } from "../support/s3-server.ts";
import { call, describeCluster } from "./support.ts";

let cluster: Cluster;

beforeAll(async () => {
  if (skipS3) return;
  cluster = await startCluster({ nodes: 3, label: "startup" });
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await cluster?.close();
}, 120_000);

/** `db.migrating` events node `i` logged over all its lives. */
const migrations = (i: number) => logEvents(cluster.output(i), "db.migrating").length;

describeCluster("nodes starting on one database", () => {
  test("3 nodes started at once on an empty database: all answer, exactly one migrated it", async () => {
    expect(cluster.nodes.map((n) => migrations(n.index)).reduce((a, b) => a + b, 0)).toBe(1);
    const user = newUser();
    for (const n of cluster.nodes) {
      const r = await call(n.url, user, "GET", `/list_folders/${user.address}`);
      expect(r.status).toBe(200);
    }
  });

  test("a node stopped (SIGTERM, exit 0) and started again finds nothing to migrate", async () => {
    const before = migrations(1);
    expect(await cluster.stop(1)).toBe(0);
    await cluster.start(1);
    expect(migrations(1)).toBe(before);
    expect((await fetch(`${cluster.url(1)}/readyz`)).status).toBe(200);
  });
});
