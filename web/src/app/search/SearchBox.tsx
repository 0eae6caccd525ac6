import { gql, type TypedDocumentNode } from "@apollo/client";
import { useQuery } from "@apollo/client/react";
import { type KeyboardEvent, useEffect, useId, useState } from "react";

import { apiProblem } from "../apollo/errors";
import { FollowButton } from "../follow/FollowButton";
import { RelationshipBadge } from "../follow/RelationshipBadge";
import { navigate, profileHash, searchHash } from "../route";
import { Avatar } from "../ui/Avatar";
import { displayName } from "../ui/names";
import { countOf } from "../ui/plural";
import { SEARCH_EDGE_FRAGMENT, type SearchEdge } from "./results";

const RESULTS = 8;
const DEBOUNCE_MS = 200;

const SEARCH_USERS: TypedDocumentNode<
  { searchUsers: { edges: SearchEdge[]; pageInfo: { hasNextPage: boolean } } },
  { query: string; first: number }
> = gql`
  query SearchUsers($query: String!, $first: Int!) {
    searchUsers(query: $query, first: $first) {
      edges {
        ...SearchResult_edge
      }
      pageInfo {
        hasNextPage
      }
    }
  }
  ${SEARCH_EDGE_FRAGMENT}
`;

interface Active {
  row: number;
  /** 0: the person (Enter opens their profile); 1: their Follow button (Enter presses it). */
  cell: 0 | 1;
}

/**
 * People search in the top bar (searchUsers): an ARIA combobox whose popup is a grid, one row per
 * person with their relationship and a Follow button. Focus stays in the box: Down and Up move
 * between people, Right and Left between the person and their button, Enter opens the profile (or
 * presses the button), and with no one chosen the page of everyone found (#/search/<words>);
 * Escape closes the results (and, when closed, clears the box).
 */
export function SearchBox() {
  const id = useId();
  const [text, setText] = useState("");
  const [query, setQuery] = useState("");
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState<Active | null>(null);

  useEffect(() => {
    const timer = setTimeout(() => setQuery(text.trim()), DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [text]);

  const { data, previousData, loading, error } = useQuery(SEARCH_USERS, {
    variables: { query, first: RESULTS },
    skip: query === "",
  });
  const edges = query === "" ? [] : ((data ?? previousData)?.searchUsers.edges ?? []);
  const shown = open && text.trim() !== "";
  const expanded = shown && edges.length > 0;
  const gridId = `${id}-grid`;
  const cellId = (row: number, cell: number) => `${id}-cell-${row}-${cell}`;
  const current = active && active.row < edges.length ? active : null;

  function close() {
    setOpen(false);
    setActive(null);
  }

  function openProfile(row: number) {
    const edge = edges[row];
    if (!edge) return;
    close();
    navigate(profileHash(edge.node.userId));
  }

  function openAll() {
    close();
    navigate(searchHash(text));
  }

  /** The enabled button of a row, if it has one (none for the viewer, or a user they block). */
  function rowButton(row: number): HTMLButtonElement | null {
    return document.getElementById(cellId(row, 1))?.querySelector<HTMLButtonElement>("button:not(:disabled)") ?? null;
  }

  function onKeyDown(event: KeyboardEvent<HTMLInputElement>) {
    const last = edges.length - 1;
    switch (event.key) {
      case "ArrowDown":
        event.preventDefault();
        setOpen(true);
        if (last >= 0) setActive({ row: current ? Math.min(current.row + 1, last) : 0, cell: current?.cell ?? 0 });
        break;
      case "ArrowUp":
        event.preventDefault();
        setActive(current && current.row > 0 ? { row: current.row - 1, cell: current.cell } : null);
        break;
      case "ArrowRight":
      case "ArrowLeft":
        // Without a person chosen, the arrows move the caret in the box.
        if (!current) return;
        event.preventDefault();
        setActive({ row: current.row, cell: event.key === "ArrowRight" && rowButton(current.row) ? 1 : 0 });
        break;
      case "Enter":
        if (text.trim() === "") return;
        event.preventDefault();
        if (!current) openAll();
        else if (current.cell === 1) rowButton(current.row)?.click();
        else openProfile(current.row);
        break;
      case "Escape":
        event.preventDefault();
        if (shown) close();
        else setText("");
        break;
    }
  }

  const activeCell = current;

  return (
    <div
      className="search"
      onBlur={(event) => {
        if (!event.currentTarget.contains(event.relatedTarget)) close();
      }}
    >
      <input
        type="search"
        className="search-input"
        placeholder="Search people"
        aria-label="Search people"
        role="combobox"
        aria-expanded={expanded}
        aria-controls={expanded ? gridId : undefined}
        aria-haspopup="grid"
        aria-autocomplete="list"
        aria-activedescendant={expanded && activeCell ? cellId(activeCell.row, activeCell.cell) : undefined}
        autoComplete="off"
        spellCheck={false}
        value={text}
        onChange={(event) => {
          setText(event.target.value);
          setOpen(true);
          setActive(null);
        }}
        onFocus={() => setOpen(true)}
        onKeyDown={onKeyDown}
      />
      {shown && (
        // Pressing in the results keeps the focus in the box (and the results open).
        <div className="search-popup" onMouseDown={(event) => event.preventDefault()}>
          {expanded && (
            <div role="grid" id={gridId} aria-label={`People matching “${query}”`} className="search-grid">
              {edges.map((edge, row) => (
                <div
                  key={edge.node.id}
                  role="row"
                  className={`search-row${activeCell?.row === row ? " search-row-active" : ""}`}
                  data-user-id={edge.node.userId}
                >
                  <div
                    role="gridcell"
                    id={cellId(row, 0)}
                    className={`search-person${activeCell?.row === row && activeCell.cell === 0 ? " search-cell-active" : ""}`}
                    onClick={() => openProfile(row)}
                  >
                    <Avatar userId={edge.node.userId} name={edge.node.name} url={edge.node.avatarUrl} size={32} />
                    <span className="search-text">
                      <span className="search-name">
                        {displayName(edge.node)} <RelationshipBadge relationship={edge.relationship} />
                      </span>
                      <span className="muted">
                        @{edge.node.userId} · {countOf(edge.node.fansCount, "fan")}
                      </span>
                    </span>
                  </div>
                  <div
                    role="gridcell"
                    id={cellId(row, 1)}
                    className={`search-action${activeCell?.row === row && activeCell.cell === 1 ? " search-cell-active" : ""}`}
                  >
                    <FollowButton user={edge.node} tabIndex={-1} />
                  </div>
                </div>
              ))}
            </div>
          )}
          {expanded && (
            <a className="search-all" href={searchHash(text)} onClick={close}>
              Everyone matching “{text.trim()}”
            </a>
          )}
          <p className="search-status muted" role="status">
            {error
              ? `Search is not available: ${apiProblem(error).message}`
              : loading && edges.length === 0
                ? "Searching…"
                : !loading && query !== "" && edges.length === 0
                  ? `No one matches “${query}”.`
                  : ""}
          </p>
        </div>
      )}
    </div>
  );
}
