import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { UNREACHABLE } from "../apollo/errors";
import {
  AccountFileError,
  accountsIn,
  downloadList,
  fileNameOf,
  importStatus,
  parseImportStatus,
  startImport,
} from "./files";

/** A fetch answering `respond(url, init)`, recording its calls. */
function server(respond: (url: string, init: RequestInit) => Response) {
  const fetch = vi.fn(async (url: string, init: RequestInit) => respond(url, init));
  vi.stubGlobal("fetch", fetch);
  return fetch;
}

const json = (body: unknown, status = 200) => Response.json(body, { status });
const authorization = (init: RequestInit) => new Headers(init.headers).get("authorization");

beforeEach(() => vi.unstubAllGlobals());
afterEach(() => vi.unstubAllGlobals());

describe("downloading a list", () => {
  it("sends the token, and names the file and its accounts", async () => {
    const csv = "Account address,Show boosts,Notify on new posts,Languages\n11,true,false,\n291,true,false,\n";
    const fetch = server(
      () =>
        new Response(csv, {
          headers: {
            "content-type": "text/csv; charset=utf-8",
            "content-disposition": 'attachment; filename="following.csv"',
          },
        }),
    );
    const file = await downloadList("t0ken", "following");
    expect(fetch.mock.calls[0]![0]).toBe("/account/export/following.csv");
    expect(authorization(fetch.mock.calls[0]![1])).toBe("Bearer t0ken");
    expect(file.fileName).toBe("following.csv");
    expect(file.accounts).toBe(2);
    expect(await file.blob.text()).toBe(csv);
  });

  it("says an expired session, the server's own refusal, a server down and no server, plainly", async () => {
    server(() => json({ error: "The token has expired." }, 401));
    await expect(downloadList("old", "blocks")).rejects.toMatchObject({
      problem: { code: "UNAUTHENTICATED", message: "Your session has expired: sign in again." },
    });
    server(() => json({ error: "No such list here: there are following, followers, blocks, mutes." }, 404));
    await expect(downloadList("t", "blocks")).rejects.toThrow(/^No such list here/);
    server(() => new Response("<html>Bad Gateway</html>", { status: 502 }));
    await expect(downloadList("t", "blocks")).rejects.toMatchObject({ problem: { code: "HTTP_502", retryable: true } });
    server(() => {
      throw new TypeError("Failed to fetch");
    });
    await expect(downloadList("t", "blocks")).rejects.toThrow(UNREACHABLE);
  });
});

describe("importing a file", () => {
  it("posts the file as text/csv to the list and mode, and reads the first status", async () => {
    const fetch = server(() => json({ state: "running", list: "mutes", mode: "overwrite", rows: 3 }, 202));
    const file = new Blob(["Account address,Hide notifications\n7,true\n"]);
    const started = await startImport("t0ken", "mutes", "overwrite", file);
    const [url, init] = fetch.mock.calls[0]!;
    expect(url).toBe("/account/import/mutes?mode=overwrite");
    expect(init.method).toBe("POST");
    expect(new Headers(init.headers).get("content-type")).toBe("text/csv");
    expect(authorization(init)).toBe("Bearer t0ken");
    expect(init.body).toBe(file);
    expect(started).toMatchObject({ state: "running", list: "mutes", mode: "overwrite", rows: 3, applied: 0 });
  });

  it("tells a refused file from an import already running", async () => {
    server(() => json({ error: "The file names 10,001 accounts; at most 10,000 a file." }, 400));
    const refused = await startImport("t", "following", "merge", new Blob([""])).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AccountFileError);
    expect(refused).toMatchObject({
      running: false,
      message: "The file names 10,001 accounts; at most 10,000 a file.",
    });
    server(() => json({ error: "An import of this user's is running." }, 409));
    await expect(startImport("t", "following", "merge", new Blob([""]))).rejects.toMatchObject({ running: true });
  });

  it("reads the latest import, or none (404)", async () => {
    server(() => json({ error: "This user has imported nothing yet." }, 404));
    expect(await importStatus("t")).toBeNull();
    const problems = [{ line: 3, address: "foo@mastodon.social", reason: "an account of another service" }];
    server(() =>
      json({
        state: "done",
        list: "following",
        mode: "merge",
        rows: 5,
        applied: 1,
        failed: 4,
        removed: 0,
        problems,
        started: 1,
        finished: 2,
      }),
    );
    expect(await importStatus("t")).toEqual({
      state: "done",
      list: "following",
      mode: "merge",
      rows: 5,
      applied: 1,
      failed: 4,
      removed: 0,
      problems,
      started: 1,
      finished: 2,
    });
  });
});

describe("reading the server's answers", () => {
  it("takes an unknown state as failed, and missing counts as zero", () => {
    expect(parseImportStatus({ state: "exploded" })).toMatchObject({ state: "failed", rows: 0, problems: [] });
    expect(parseImportStatus(null)).toMatchObject({ state: "failed", list: null });
  });

  it("finds the file name in Content-Disposition", () => {
    expect(fileNameOf('attachment; filename="blocks.csv"')).toBe("blocks.csv");
    expect(fileNameOf("attachment; filename=mutes.csv")).toBe("mutes.csv");
    expect(fileNameOf("attachment")).toBeNull();
    expect(fileNameOf(null)).toBeNull();
  });

  it("counts a file's accounts, with or without a header row", () => {
    expect(accountsIn("Account address\n1\n2\n")).toBe(2);
    expect(accountsIn("Account address,Hide notifications\r\n7,true\r\n")).toBe(1);
    expect(accountsIn("5\n6\n7")).toBe(3);
    expect(accountsIn("Account address\n")).toBe(0);
    expect(accountsIn("")).toBe(0);
  });
});
