import type { ReactNode } from "react";

/** One user's follow, block, mute or request buttons, with the last action's error beside them. */
export function ActionGroup({ error, children }: { error: string | null; children: ReactNode }) {
  return (
    <span className="follow">
      {children}
      {error && (
        <span role="alert" className="error-inline">
          {error}
        </span>
      )}
    </span>
  );
}
