import { useApolloClient } from "@apollo/client/react";
import { useEffect, useId, useRef, useState } from "react";

import { useSession } from "../session/SessionContext";
import { useViewer } from "../session/ViewerContext";
import { useConfirm } from "../ui/ConfirmDialog";
import {
  AccountFileError,
  type ImportedList,
  type ImportMode,
  type ImportStatus,
  importStatus,
  startImport,
} from "./files";
import { forgetImported } from "./afterImport";
import { hasImported, noteImported } from "./lastImport";
import { IMPORTED, LISTS, importProgress, importSummary, modeText, unlistedProblems } from "./report";

// How often a running import is asked about: it writes its counts after every 500 rows.
const POLL_MS = 1000;

/**
 * Uploads a CSV file into one of the lists (merge or overwrite, overwrite asked first), then
 * follows the background import until it is done and lists the rows it could not apply. The
 * latest import is shown on arrival too, still running or not.
 */
export function DataUpload() {
  const { session } = useSession();
  const viewer = useViewer();
  const { userId } = viewer;
  const { cache } = useApolloClient();
  const confirm = useConfirm();
  const id = useId();
  const fileInput = useRef<HTMLInputElement>(null);
  const [list, setList] = useState<ImportedList>("following");
  const [mode, setMode] = useState<ImportMode>("merge");
  const [status, setStatus] = useState<ImportStatus | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  // Counts the times the latest import is to be read again (after a 409: one already runs).
  const [arrivals, setArrivals] = useState(0);
  const running = status?.state === "running";

  const failed = (error: unknown) => setProblem(error instanceof AccountFileError ? error.message : String(error));

  // On arrival: the latest import, where this browser started one.
  useEffect(() => {
    if (!hasImported(userId)) return;
    let stopped = false;
    importStatus(session.token).then(
      (latest) => {
        if (stopped) return;
        setStatus(latest);
        if (latest === null) noteImported(userId, false);
      },
      (error: unknown) => !stopped && failed(error),
    );
    return () => {
      stopped = true;
    };
  }, [session.token, userId, arrivals]);

  // While it runs: its status again every second (each answer, a new object, sets the next timer).
  useEffect(() => {
    if (!running) return;
    let stopped = false;
    const timer = setTimeout(() => {
      importStatus(session.token).then(
        (latest) => !stopped && setStatus(latest),
        (error: unknown) => !stopped && failed(error),
      );
    }, POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [session.token, running, status]);

  // An import seen running, then ended: what it changed is read again from the server.
  const watched = useRef<ImportedList | null>(null);
  useEffect(() => {
    if (running && status?.list) watched.current = status.list;
    else if (!running && watched.current) {
      forgetImported(cache, viewer.id, watched.current);
      watched.current = null;
    }
  }, [cache, viewer.id, running, status?.list]);

  async function upload() {
    if (sending || running) return;
    const file = fileInput.current?.files?.[0];
    setProblem(null);
    if (!file) {
      setProblem("Choose a CSV file first.");
      fileInput.current?.focus();
      return;
    }
    if (mode === "overwrite") {
      const ok = await confirm({
        kind: "overwrite",
        title: `Overwrite ${LISTS[list].phrase}?`,
        body: (
          <>
            <p>{modeText("overwrite", list)}</p>
            <p>Only the file’s accounts remain. This cannot be undone from here.</p>
          </>
        ),
        confirm: "Overwrite",
      });
      if (!ok) return;
    }
    setSending(true);
    try {
      const started = await startImport(session.token, list, mode, file);
      noteImported(userId, true);
      setStatus(started);
    } catch (error) {
      if (error instanceof AccountFileError) {
        setProblem(error.message);
        // Another import runs (from another device, say): show how far it is instead.
        if (error.running) {
          noteImported(userId, true);
          setArrivals((n) => n + 1);
        }
      } else {
        setProblem(String(error));
      }
    } finally {
      setSending(false);
    }
  }

  const progress = status && importProgress(status);
  return (
    <section className="account-part" aria-labelledby={`${id}-title`} data-part="upload">
      <h2 id={`${id}-title`}>Upload a list</h2>
      <p className="muted">
        A CSV file in Mastodon’s format: one downloaded here, or Mastodon’s own <code>following_accounts.csv</code>,{" "}
        <code>blocked_accounts.csv</code> or <code>muted_accounts.csv</code>. Its first column names each account by its
        user id.
      </p>
      <form
        className="upload-form"
        onSubmit={(event) => {
          event.preventDefault();
          void upload();
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-file`}>CSV file</label>
          <input ref={fileInput} id={`${id}-file`} type="file" name="file" accept=".csv,text/csv" />
        </div>
        <fieldset className="choices">
          <legend>Into which list</legend>
          {IMPORTED.map((value) => (
            <div className="setting" key={value}>
              <input
                type="radio"
                id={`${id}-list-${value}`}
                name="list"
                value={value}
                checked={list === value}
                onChange={() => setList(value)}
              />
              <label htmlFor={`${id}-list-${value}`}>
                <span className="setting-label">{LISTS[value].title}</span>
              </label>
            </div>
          ))}
        </fieldset>
        <fieldset className="choices">
          <legend>How</legend>
          {(["merge", "overwrite"] as const).map((value) => (
            <div className="setting" key={value}>
              <input
                type="radio"
                id={`${id}-mode-${value}`}
                name="mode"
                value={value}
                checked={mode === value}
                aria-describedby={`${id}-mode-${value}-text`}
                onChange={() => setMode(value)}
              />
              <label htmlFor={`${id}-mode-${value}`}>
                <span className="setting-label">{value === "merge" ? "Merge" : "Overwrite"}</span>
                <span id={`${id}-mode-${value}-text`} className="muted setting-description">
                  {modeText(value, list)}
                </span>
              </label>
            </div>
          ))}
        </fieldset>
        {list === "following" && (
          <p className="muted">A follow of a locked account becomes a request, as it does from a profile.</p>
        )}
        <button type="submit" className="button" data-action="upload" aria-disabled={sending || running || undefined}>
          {sending ? "Uploading…" : "Upload"}
        </button>
      </form>
      {problem && (
        <p role="alert" className="error" data-upload-error>
          {problem}
        </p>
      )}
      <div className="import-status" data-import-state={status?.state}>
        <p role="status" id={`${id}-status`}>
          {status && importSummary(status)}
        </p>
        {running && progress && (
          <progress max={Math.max(progress.total, 1)} value={progress.done} aria-labelledby={`${id}-status`} />
        )}
      </div>
      {status && !running && status.problems.length > 0 && <ImportProblems status={status} />}
    </section>
  );
}

function ImportProblems({ status }: { status: ImportStatus }) {
  const more = unlistedProblems(status);
  return (
    <div className="import-problems">
      {/* The roles again: a table laid out as a grid (on phones) loses them in some browsers. */}
      <table role="table">
        <caption>Rows that could not be applied</caption>
        <thead role="rowgroup">
          <tr role="row">
            <th role="columnheader" scope="col">
              Line
            </th>
            <th role="columnheader" scope="col">
              Account
            </th>
            <th role="columnheader" scope="col">
              Why
            </th>
          </tr>
        </thead>
        <tbody role="rowgroup">
          {status.problems.map((row) => (
            <tr role="row" key={`${row.line}-${row.address}`} data-line={row.line}>
              <td role="cell">{row.line}</td>
              <td role="cell">{row.address}</td>
              <td role="cell">{row.reason}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {more && <p className="muted">{more}</p>}
    </div>
  );
}
