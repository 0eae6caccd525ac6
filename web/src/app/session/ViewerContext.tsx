import { createContext, useContext } from "react";

/** The signed-in user: their Relay `id` (the cache key) and their application `userId`. */
export interface Viewer {
  id: string;
  userId: string;
}

export const ViewerContext = createContext<Viewer | null>(null);

export function useViewer(): Viewer {
  const viewer = useContext(ViewerContext);
  if (!viewer) throw new Error("useViewer needs a signed-in viewer (ViewerContext)");
  return viewer;
}
