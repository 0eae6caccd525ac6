import type { ApiProblem } from "../apollo/errors";

/** An error as the reader sees it; the request id helps support find it in the server's log. */
export function ErrorNotice({ problem }: { problem: ApiProblem }) {
  return (
    <p role="alert" className="error" data-code={problem.code}>
      {problem.message}
      {problem.requestId && <span className="muted"> (request {problem.requestId})</span>}
    </p>
  );
}
