import { useState } from "react";

import type { ApiProblem } from "../apollo/errors";

/**
 * An error as the reader sees it; the request id helps support find it in the server's log.
 * With `onRetry`, a problem that may go away (the server unreachable or failing) gets a Retry button.
 */
export function ErrorNotice({ problem, onRetry }: { problem: ApiProblem; onRetry?: () => unknown }) {
  const [retrying, setRetrying] = useState(false);

  async function retry() {
    setRetrying(true);
    try {
      await onRetry?.();
    } catch {
      // A refetch that fails again rejects: the query's own error state shows why.
    } finally {
      setRetrying(false);
    }
  }

  return (
    <div role="alert" className="error-notice" data-code={problem.code}>
      <p className="error">
        {problem.message}
        {problem.requestId && <span className="muted"> (request {problem.requestId})</span>}
      </p>
      {onRetry && problem.retryable && (
        <button
          type="button"
          className="button button-secondary"
          data-action="retry"
          disabled={retrying}
          onClick={() => void retry()}
        >
          {retrying ? "Retrying…" : "Retry"}
        </button>
      )}
    </div>
  );
}
