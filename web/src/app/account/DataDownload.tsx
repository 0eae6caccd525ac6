import { useId, useState } from "react";

import { useSession } from "../session/SessionContext";
import { countOf } from "../ui/plural";
import { AccountFileError, type ExportedList, downloadList } from "./files";
import { EXPORTED, LISTS } from "./report";

type Outcome = { list: ExportedList; text: string; failed: boolean };

/** Saves the file through a link with `download`: the browser's own "save as", no new tab. */
function save(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = fileName;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // Revoked once the browser has started the download from it.
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A button per list that downloads it as Mastodon's CSV with the session's token. */
export function DataDownload() {
  const { session } = useSession();
  const [busy, setBusy] = useState<ExportedList | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const titleId = useId();

  async function download(list: ExportedList) {
    if (busy) return;
    setBusy(list);
    setOutcome(null);
    try {
      const file = await downloadList(session.token, list);
      save(file.blob, file.fileName);
      setOutcome({ list, text: `${file.fileName} saved: ${countOf(file.accounts, "account")}.`, failed: false });
    } catch (error) {
      const text = error instanceof AccountFileError ? error.message : String(error);
      setOutcome({ list, text: `${LISTS[list].title} could not be downloaded. ${text}`, failed: true });
    } finally {
      setBusy(null);
    }
  }

  return (
    <section className="account-part" aria-labelledby={titleId} data-part="download">
      <h2 id={titleId}>Download your data</h2>
      <p className="muted">
        Your lists as CSV files, in the formats Mastodon exports and imports: to keep, or to take to another service.
      </p>
      <ul className="download-list">
        {EXPORTED.map((list) => (
          <li key={list}>
            <span className="download-name">
              {LISTS[list].title}
              <span className="muted"> · {list}.csv</span>
            </span>
            <button
              type="button"
              className="button button-secondary"
              data-action={`download-${list}`}
              aria-label={`Download ${LISTS[list].phrase} (${list}.csv)`}
              aria-disabled={busy !== null || undefined}
              onClick={() => void download(list)}
            >
              {busy === list ? "Downloading…" : "Download"}
            </button>
          </li>
        ))}
      </ul>
      <p
        className="muted account-status"
        role="status"
        data-download-status={outcome?.failed ? undefined : outcome?.list}
      >
        {outcome && !outcome.failed && outcome.text}
      </p>
      {outcome?.failed && (
        <p role="alert" className="error" data-download-error={outcome.list}>
          {outcome.text}
        </p>
      )}
    </section>
  );
}
