import { useEffect, useRef, useState } from "react";

/**
 * Outside demo mode the app needs a token: in a real product, your login flow issues it. After a
 * demo session (its account deleted, its token expired) `onDemo` goes back to the demo instead.
 */
export function SignIn({
  onToken,
  onDemo,
  problem,
  notice,
}: {
  onToken: (token: string) => void;
  onDemo?: () => void;
  problem?: string;
  notice?: string;
}) {
  const [token, setToken] = useState("");
  // The page replaces the one whose button was pressed: the notice takes the focus, so it is read.
  const shown = useRef<HTMLParagraphElement>(null);
  useEffect(() => shown.current?.focus(), [notice]);
  return (
    <form
      className="sign-in"
      onSubmit={(event) => {
        event.preventDefault();
        if (token.trim()) onToken(token.trim());
      }}
    >
      <h1>FollowGraph</h1>
      {notice && (
        <p ref={shown} role="status" className="notice" data-notice tabIndex={-1}>
          {notice}
        </p>
      )}
      {problem && (
        <p role="alert" className="error">
          {problem}
        </p>
      )}
      {onDemo && (
        <button type="button" className="button" data-action="back-to-demo" onClick={onDemo}>
          Continue with the demo
        </button>
      )}
      <p>
        {onDemo ? "Or paste" : "Paste"} a bearer token to sign in (<code>followgraph token USER_ID</code> prints one).
      </p>
      <textarea value={token} onChange={(event) => setToken(event.target.value)} rows={4} aria-label="Token" />
      <button type="submit" className={onDemo ? "button button-secondary" : "button"}>
        Sign in
      </button>
    </form>
  );
}
