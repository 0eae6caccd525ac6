import { type ApiProblem, UNREACHABLE, isNetworkFailure } from "../apollo/errors";

/**
 * The account's file endpoints (docs/api.md, "Taking your graph with you"), called with the
 * session's bearer token: the lists as Mastodon's CSV files, and an import of such a file, applied
 * in the background, whose progress GET /account/import tells.
 */

/** The lists a user can download, by their file's name on the server. */
export type ExportedList = "following" | "followers" | "blocks" | "mutes";
/** The lists a file can be imported into: a user's fans are theirs to choose. */
export type ImportedList = "following" | "blocks" | "mutes";
/** merge adds the file's accounts to the list; overwrite also ends the entries the file does not name. */
export type ImportMode = "merge" | "overwrite";

/** Where an import stands: `interrupted` when the server that ran it stopped. */
export type ImportState = "running" | "done" | "failed" | "interrupted";

/** A row of the file that could not be applied, and why (the server's words). */
export interface ImportProblem {
  line: number;
  address: string;
  reason: string;
}

/** GET /account/import: the latest import, its counts, and up to 100 of the rows it refused. */
export interface ImportStatus {
  state: ImportState;
  list: ImportedList | null;
  mode: ImportMode | null;
  rows: number;
  applied: number;
  failed: number;
  removed: number;
  problems: ImportProblem[];
  started?: number;
  finished?: number;
}

/** A refusal of the file endpoints, with the server's sentence; `running` for a 409 (an import already runs). */
export class AccountFileError extends Error {
  constructor(
    readonly problem: ApiProblem,
    readonly running = false,
  ) {
    super(problem.message);
    this.name = "AccountFileError";
  }
}

const EXPIRED = "Your session has expired: sign in again.";

/** A downloaded list: the file, its name, and how many accounts it names. */
export interface Download {
  blob: Blob;
  fileName: string;
  accounts: number;
}

/** The CSV of `list`, read whole (the server streams it page by page). */
export async function downloadList(token: string, list: ExportedList): Promise<Download> {
  const response = await call(`/account/export/${list}.csv`, { headers: { authorization: `Bearer ${token}` } });
  if (!response.ok) throw await refusal(response);
  const text = await response.text();
  return {
    blob: new Blob([text], { type: "text/csv;charset=utf-8" }),
    fileName: fileNameOf(response.headers.get("content-disposition")) ?? `${list}.csv`,
    accounts: accountsIn(text),
  };
}

/** Starts importing `file` into `list`: the import's first status (202); AccountFileError when refused. */
export async function startImport(
  token: string,
  list: ImportedList,
  mode: ImportMode,
  file: Blob,
): Promise<ImportStatus> {
  const response = await call(`/account/import/${list}?mode=${mode}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "text/csv" },
    body: file,
  });
  if (!response.ok) throw await refusal(response);
  return parseImportStatus(await response.json());
}

/** The latest import's status; null when the user has imported nothing yet. */
export async function importStatus(token: string): Promise<ImportStatus | null> {
  const response = await call("/account/import", { headers: { authorization: `Bearer ${token}` } });
  if (response.status === 404) return null;
  if (!response.ok) throw await refusal(response);
  return parseImportStatus(await response.json());
}

async function call(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    if (isNetworkFailure(error)) throw new AccountFileError({ code: "NETWORK", message: UNREACHABLE, retryable: true });
    throw error;
  }
}

/** The error a refused call answers with: the server's own sentence (`{"error": ...}`) where it gave one. */
async function refusal(response: Response): Promise<AccountFileError> {
  const body = (await response.json().catch(() => null)) as { error?: unknown } | null;
  const said = typeof body?.error === "string" ? body.error : null;
  const code = `HTTP_${response.status}`;
  if (response.status === 401) return new AccountFileError({ code: "UNAUTHENTICATED", message: EXPIRED });
  if (response.status >= 500) {
    const message = `The FollowGraph server could not do it (HTTP ${response.status}). Try again later.`;
    return new AccountFileError({ code, message, retryable: true });
  }
  const message = said ?? `The FollowGraph server refused it (HTTP ${response.status}).`;
  return new AccountFileError({ code, message }, response.status === 409);
}

const STATES: readonly string[] = ["running", "done", "failed", "interrupted"];

/** An import's status as the server sends it, checked: a field it lacks counts as zero. */
export function parseImportStatus(json: unknown): ImportStatus {
  const body = (typeof json === "object" && json !== null ? json : {}) as Record<string, unknown>;
  const state = typeof body.state === "string" && STATES.includes(body.state) ? (body.state as ImportState) : "failed";
  const count = (name: string) => (typeof body[name] === "number" ? (body[name] as number) : 0);
  const problems = Array.isArray(body.problems) ? body.problems : [];
  const status: ImportStatus = {
    state,
    list: (typeof body.list === "string" ? body.list : null) as ImportedList | null,
    mode: (typeof body.mode === "string" ? body.mode : null) as ImportMode | null,
    rows: count("rows"),
    applied: count("applied"),
    failed: count("failed"),
    removed: count("removed"),
    problems: problems.map((problem: unknown) => {
      const row = (problem ?? {}) as Record<string, unknown>;
      return { line: Number(row.line) || 0, address: String(row.address ?? ""), reason: String(row.reason ?? "") };
    }),
  };
  if (typeof body.started === "number") status.started = body.started;
  if (typeof body.finished === "number") status.finished = body.finished;
  return status;
}

/** The file name a Content-Disposition header gives (`attachment; filename="following.csv"`). */
export function fileNameOf(header: string | null): string | null {
  const match = header && /filename="?([^";]+)"?/i.exec(header);
  return match ? match[1]!.trim() : null;
}

/** The accounts an exported CSV names: its non-empty lines, less the header row where it has one. */
export function accountsIn(text: string): number {
  const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "");
  const header = lines[0]?.toLowerCase().startsWith("account address") ? 1 : 0;
  return lines.length - header;
}
