import { countOf } from "../ui/plural";
import type { ExportedList, ImportedList, ImportMode, ImportStatus } from "./files";

/** The lists as the settings name them: a title, and how a sentence says it. */
export const LISTS: Record<ExportedList, { title: string; phrase: string }> = {
  following: { title: "Following", phrase: "whom you follow" },
  followers: { title: "Fans", phrase: "your fans" },
  blocks: { title: "Blocked", phrase: "whom you block" },
  mutes: { title: "Muted", phrase: "whom you mute" },
};

export const EXPORTED: ExportedList[] = ["following", "followers", "blocks", "mutes"];
export const IMPORTED: ImportedList[] = ["following", "blocks", "mutes"];

/** What each mode does to `list`, in a sentence. */
export function modeText(mode: ImportMode, list: ImportedList): string {
  const ended = { following: "unfollowed", blocks: "unblocked", mutes: "unmuted" }[list];
  return mode === "merge"
    ? `Adds the file’s accounts to ${LISTS[list].phrase}; everyone already there stays.`
    : `Makes ${LISTS[list].phrase} exactly the file: everyone the file does not name is ${ended}.`;
}

/** How far an import is: rows dealt with (applied or refused) of the file's rows. */
export function importProgress(status: ImportStatus): { done: number; total: number } {
  const total = status.rows;
  return { done: Math.min(total, status.applied + status.failed), total };
}

/** One sentence on where the import stands, for its status line. */
export function importSummary(status: ImportStatus): string {
  const into = status.list && status.list in LISTS ? ` into ${LISTS[status.list].phrase}` : "";
  switch (status.state) {
    case "running": {
      const { done, total } = importProgress(status);
      return `Importing${into}: ${done.toLocaleString()} of ${countOf(total, "row")} done.`;
    }
    case "done": {
      const parts = [`${status.applied.toLocaleString()} applied`];
      if (status.failed > 0) parts.push(`${status.failed.toLocaleString()} could not be applied`);
      if (status.mode === "overwrite") parts.push(`${status.removed.toLocaleString()} removed`);
      return `The import${into} is done: ${countOf(status.rows, "row")}, ${parts.join(", ")}.`;
    }
    case "interrupted":
      return `The import${into} was cut short when the server stopped. Import the file again: rows already applied are kept.`;
    case "failed":
      return `The import${into} failed on the server; some rows may have been applied. Try again later.`;
  }
}

/** Under the problems listed, when the server listed fewer than it counted (it keeps the first 100). */
export function unlistedProblems(status: ImportStatus): string | null {
  const unlisted = status.failed - status.problems.length;
  return unlisted > 0 ? `And ${countOf(unlisted, "more row")} not listed here.` : null;
}
