import { gql, type TypedDocumentNode } from "@apollo/client";
import { useApolloClient, useMutation, useQuery } from "@apollo/client/react";
import { type ReactNode, useId, useLayoutEffect, useRef, useState } from "react";

import { AccountSettings } from "../account/AccountSettings";
import { apiProblem, userErrorText, type UserError } from "../apollo/errors";
import { FollowList } from "../lists/FollowList";
import { BLOCKED, MUTED } from "../lists/tabs";
import { navigate, profileHash, restoreScroll, settingsHash } from "../route";
import { useViewer } from "../session/ViewerContext";
import { useConfirm } from "../ui/ConfirmDialog";
import { ErrorNotice } from "../ui/ErrorNotice";
import { countOf } from "../ui/plural";
import { RowSkeletons } from "../ui/Skeleton";
import { useDocumentTitle } from "../ui/useDocumentTitle";

interface Settings {
  __typename?: "UserSettings";
  locked: boolean;
  hideFollowing: boolean;
  hideFans: boolean;
}

type SettingKey = keyof Omit<Settings, "__typename">;

const SETTINGS: TypedDocumentNode<{
  viewer: { id: string; userId: string; followRequestCount: number | null; settings: Settings | null } | null;
}> = gql`
  query Settings {
    viewer {
      id
      userId
      followRequestCount
      settings {
        locked
        hideFollowing
        hideFans
      }
    }
  }
`;

interface UpdateData {
  updateSettings: {
    __typename: "UpdateSettingsPayload";
    settings: (Settings & { __typename: "UserSettings" }) | null;
    viewer: {
      __typename: "User";
      id: string;
      isLocked: boolean;
      followRequestCount: number | null;
      settings: (Settings & { __typename: "UserSettings" }) | null;
    } | null;
    errors: (UserError & { __typename: "UserError" })[];
  };
}

const UPDATE_SETTINGS: TypedDocumentNode<UpdateData, { input: Partial<Settings> }> = gql`
  mutation UpdateSettings($input: UpdateSettingsInput!) {
    updateSettings(input: $input) {
      settings {
        locked
        hideFollowing
        hideFans
      }
      viewer {
        id
        isLocked
        followRequestCount
        settings {
          locked
          hideFollowing
          hideFans
        }
      }
      errors {
        code
        message
      }
    }
  }
`;

const OPTIONS: { key: SettingKey; label: string; description: string }[] = [
  {
    key: "locked",
    label: "Locked account",
    description:
      "New fans need your approval: a follow becomes a request you accept or reject. Your lists are shown only to you and your fans.",
  },
  {
    key: "hideFollowing",
    label: "Hide whom you follow",
    description: "Your following list, and your mutuals, are shown to nobody but you.",
  },
  {
    key: "hideFans",
    label: "Hide your fans",
    description: "Your fans list, and which of your fans someone knows, are shown to nobody but you.",
  },
];

const SECTIONS = [
  { key: "", label: "Privacy" },
  { key: "blocked", label: "Blocked" },
  { key: "muted", label: "Muted" },
  { key: "account", label: "Account" },
];

/**
 * The viewer's settings: privacy (updateSettings), the users they block and mute, and their account
 * (its lists as files, deactivation, deletion).
 */
export default function SettingsPage({ section }: { section: string }) {
  const viewer = useViewer();
  const current = SECTIONS.find((s) => s.key === section) ?? SECTIONS[0]!;
  useDocumentTitle(current.key ? `${current.label} · Settings` : "Settings");
  const open = (id: string) => navigate(profileHash(id));
  return (
    <section className="profile settings" aria-labelledby="settings-title">
      <div className="settings-head">
        <h1 id="settings-title">Settings</h1>
        <nav className="segments" aria-label="Settings">
          {SECTIONS.map((s) => (
            <a
              key={s.key}
              href={settingsHash(s.key)}
              aria-current={s.key === current.key ? "page" : undefined}
              data-segment={s.key || "privacy"}
              onClick={(event) => {
                event.preventDefault();
                navigate(settingsHash(s.key), { keepScroll: true });
              }}
            >
              {s.label}
            </a>
          ))}
        </nav>
      </div>
      {current.key === "" && <Privacy />}
      {current.key === "blocked" && <FollowList key="blocked" tab={BLOCKED} userId={viewer.userId} onOpen={open} />}
      {current.key === "muted" && <FollowList key="muted" tab={MUTED} userId={viewer.userId} onOpen={open} />}
      {current.key === "account" && <AccountSettings />}
    </section>
  );
}

function Privacy() {
  const client = useApolloClient();
  const confirm = useConfirm();
  const { data, error, refetch } = useQuery(SETTINGS);
  const [update] = useMutation(UPDATE_SETTINGS);
  const [status, setStatus] = useState<ReactNode>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const saving = useRef(false);
  const ready = data !== undefined;
  useLayoutEffect(() => restoreScroll(ready), [ready]);

  if (error) return <ErrorNotice problem={apiProblem(error)} onRetry={() => refetch()} />;
  if (!data) return <RowSkeletons count={3} />;
  const viewer = data.viewer;
  const settings = viewer?.settings;
  if (!viewer || !settings) return <p className="error">The settings cannot be read.</p>;
  const requests = viewer.followRequestCount ?? 0;

  async function change(key: SettingKey, value: boolean) {
    if (saving.current || !viewer || !settings) return;
    if (key === "locked" && !value && requests > 0) {
      const ok = await confirm({
        kind: "unlock",
        title: "Unlock your account?",
        body: (
          <p>
            Unlocking accepts the {countOf(requests, "pending request")}: {requests === 1 ? "that user becomes" : "they become"}{" "}
            your {requests === 1 ? "fan" : "fans"}.
          </p>
        ),
        confirm: "Unlock",
      });
      if (!ok) return;
    }
    saving.current = true;
    setProblem(null);
    setStatus("Saving…");
    const next = { __typename: "UserSettings" as const, ...settings, [key]: value };
    try {
      const { data: result } = await update({
        variables: { input: { [key]: value } },
        optimisticResponse: {
          updateSettings: {
            __typename: "UpdateSettingsPayload",
            settings: next,
            viewer: {
              __typename: "User",
              id: viewer.id,
              isLocked: next.locked,
              followRequestCount: key === "locked" && !value ? 0 : viewer.followRequestCount,
              settings: next,
            },
            errors: [],
          },
        },
      });
      const userError = result?.updateSettings.errors[0];
      if (userError) {
        setProblem(userErrorText(userError));
        setStatus(null);
        return;
      }
      if (key === "locked" && !value && requests > 0) {
        // The requests became follows: the lists they were in, and those they join, are fetched again.
        const ref = client.cache.identify({ __typename: "User", id: viewer.id });
        for (const fieldName of ["followRequests", "fans", "mutuals", "fansCount", "mutualCount"]) {
          client.cache.evict({ id: ref, fieldName });
        }
        client.cache.gc();
      }
      setStatus("Saved.");
    } catch (caught) {
      setProblem(apiProblem(caught).message);
      setStatus(null);
    } finally {
      saving.current = false;
    }
  }

  return (
    <form className="privacy" onSubmit={(event) => event.preventDefault()}>
      <fieldset>
        <legend>Privacy</legend>
        {OPTIONS.map((option) => (
          <Setting
            key={option.key}
            option={option}
            checked={settings[option.key]}
            onChange={(value) => void change(option.key, value)}
          />
        ))}
      </fieldset>
      <p className="muted settings-status" role="status">
        {status}
      </p>
      {problem && (
        <p role="alert" className="error">
          {problem}
        </p>
      )}
    </form>
  );
}

function Setting({
  option,
  checked,
  onChange,
}: {
  option: (typeof OPTIONS)[number];
  checked: boolean;
  onChange: (value: boolean) => void;
}) {
  const id = useId();
  return (
    <div className="setting">
      <input
        type="checkbox"
        id={id}
        name={option.key}
        checked={checked}
        aria-describedby={`${id}-description`}
        onChange={(event) => onChange(event.target.checked)}
      />
      <label htmlFor={id}>
        <span className="setting-label">{option.label}</span>
        <span id={`${id}-description`} className="muted setting-description">
          {option.description}
        </span>
      </label>
    </div>
  );
}
