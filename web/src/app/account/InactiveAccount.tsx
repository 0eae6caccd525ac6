import { gql, type TypedDocumentNode } from "@apollo/client";
import { useApolloClient, useMutation, useQuery } from "@apollo/client/react";
import { type ReactNode, useEffect, useId, useRef, useState } from "react";

import { apiProblem, userErrorText } from "../apollo/errors";
import { navigate, parseRoute, profileHash } from "../route";
import { useSession } from "../session/SessionContext";
import { Avatar } from "../ui/Avatar";
import { displayName } from "../ui/names";
import { useDocumentTitle } from "../ui/useDocumentTitle";
import { DataDownload } from "./DataDownload";
import { DeleteAccount } from "./DeleteAccount";
import { REACTIVATE_ACCOUNT } from "./mutations";
import { type AccountState, deletedNotice, inactiveScreen } from "./state";

const ACCOUNT_STATE: TypedDocumentNode<{ viewer: { id: string; accountState: AccountState } | null }> = gql`
  query AccountState {
    viewer {
      id
      accountState
    }
  }
`;

// How often an account being deleted is asked about, until it is gone.
const DELETING_POLL_MS = 3000;

interface InactiveViewer {
  id: string;
  userId: string;
  name: string | null;
  avatarUrl: string | null;
  accountState: AccountState;
}

/**
 * The app of a viewer whose account is off, instead of the app itself: what that means, and what
 * they can still do (reactivate a deactivated account, download their lists, delete the account).
 * `switcher` is the top bar's way out: the demo picker, or Sign out; `notice`, what went wrong with it.
 */
export default function InactiveAccount({
  viewer,
  switcher,
  notice,
}: {
  viewer: InactiveViewer;
  switcher: ReactNode;
  notice?: ReactNode;
}) {
  const screen = inactiveScreen(viewer.accountState);
  const client = useApolloClient();
  const { signOut } = useSession();
  const id = useId();
  const title = useRef<HTMLHeadingElement>(null);
  const [deleting, setDeleting] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Not written into the cache: the whole cache is read again once the account is back on.
  const [reactivate] = useMutation(REACTIVATE_ACCOUNT, { fetchPolicy: "no-cache" });
  const polled = useQuery(ACCOUNT_STATE, {
    skip: viewer.accountState !== "DELETING",
    pollInterval: DELETING_POLL_MS,
    // Kept out of the cache: a null viewer there would make the app say the token names nobody.
    fetchPolicy: "no-cache",
  });
  useDocumentTitle(screen?.title ?? null);

  // This screen replaces the page whose button was pressed: its title takes the focus.
  useEffect(() => title.current?.focus(), [viewer.accountState]);

  const gone = polled.data !== undefined && polled.data.viewer === null;
  useEffect(() => {
    if (gone) signOut({ notice: deletedNotice(viewer.userId, null) });
  }, [gone, signOut, viewer.userId]);

  if (!screen) return null;

  async function bringBack() {
    if (busy) return;
    setBusy(true);
    setProblem(null);
    try {
      const { data } = await reactivate();
      const error = data?.reactivateAccount.errors[0];
      if (error) {
        setProblem(userErrorText(error));
        return;
      }
      // From Settings › Account, the profile shows the follows back; any other page stays.
      const route = parseRoute(location.hash);
      if (route.page === "settings" && route.section === "account") navigate(profileHash(viewer.userId));
      // Lists and counts changed while the account was off: everything is fetched again.
      await client.resetStore();
    } catch (caught) {
      setProblem(apiProblem(caught).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <header className="top-bar">
        <span className="brand">FollowGraph</span>
        <span className="top-bar-end">{switcher}</span>
      </header>
      <main className="page">
        {notice}
        <section className="profile inactive" aria-labelledby={`${id}-title`} data-account-state={viewer.accountState}>
          <div className="inactive-head">
            <Avatar userId={viewer.userId} name={viewer.name} url={viewer.avatarUrl} size={56} />
            <div className="inactive-text">
              <h1 id={`${id}-title`} ref={title} tabIndex={-1}>
                {screen.title}
              </h1>
              <p className="muted">
                {displayName(viewer)} · @{viewer.userId}
              </p>
            </div>
          </div>
          <div className="inactive-body">
            {screen.lines.map((line) => (
              <p key={line}>{line}</p>
            ))}
            <div className="inactive-actions">
              {screen.canReactivate && (
                <button
                  type="button"
                  className="button"
                  data-action="reactivate"
                  aria-disabled={busy || undefined}
                  onClick={() => void bringBack()}
                >
                  {busy ? "Reactivating…" : "Reactivate"}
                </button>
              )}
              {screen.canDelete && (
                <button
                  type="button"
                  className="button button-secondary"
                  data-action="show-delete"
                  aria-expanded={deleting}
                  aria-controls={`${id}-delete`}
                  onClick={() => setDeleting((shown) => !shown)}
                >
                  Delete account
                </button>
              )}
            </div>
            {problem && (
              <p role="alert" className="error">
                {problem}
              </p>
            )}
          </div>
          {screen.canDelete && (
            <div id={`${id}-delete`} hidden={!deleting}>
              {deleting && <DeleteAccount focus />}
            </div>
          )}
          {viewer.accountState !== "DELETING" && <DataDownload />}
        </section>
      </main>
    </>
  );
}
