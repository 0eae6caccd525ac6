import { useState } from "react";

/** Outside demo mode the app needs a token: in a real product, your login flow issues it. */
export function SignIn({ onToken, problem }: { onToken: (token: string) => void; problem?: string }) {
  const [token, setToken] = useState("");
  return (
    <form
      className="sign-in"
      onSubmit={(event) => {
        event.preventDefault();
        if (token.trim()) onToken(token.trim());
      }}
    >
      <h1>FollowGraph</h1>
      <p>
        Paste a bearer token to sign in (<code>followgraph token USER_ID</code> prints one).
      </p>
      {problem && (
        <p role="alert" className="error">
          {problem}
        </p>
      )}
      <textarea value={token} onChange={(event) => setToken(event.target.value)} rows={4} aria-label="Token" />
      <button type="submit" className="button">
        Sign in
      </button>
    </form>
  );
}
