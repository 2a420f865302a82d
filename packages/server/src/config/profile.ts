/**
 * @module server/config/profile
 * The API profiles (issue 15, docs/protocol.md#api-profiles). `base` follows the base spec and is
 * the default; `hcfs` (`ESYNC_API_PROFILE=hcfs`) switches exactly three rules to the deployed
 * product's:
 *
 * | Rule | base | hcfs |
 * |---|---|---|
 * | `POST /register_folder` on a registered folder | 409 `conflict` | 200 `registered`, nothing changes |
 * | `/search_files` `limit` cap | 10000 | 200 (`/browse`: 200 in both) |
 * | `q` shorter than 3 characters (after trimming, hcfs) | matches as a substring | matches nothing (200, empty page) |
 */
import { BROWSE_MAX_LIMIT, SEARCH_MAX_LIMIT } from "@esync/protocol/schemas.ts";

/** The profile names. */
export const API_PROFILES = ["base", "hcfs"] as const;
/** An API profile. */
export type ApiProfile = (typeof API_PROFILES)[number];

/** The rules a profile sets. */
export interface ProfileRules {
  /** `/register_folder` on a registered folder answers 200 (true) or 409 (false). */
  registerFolderUpsert: boolean;
  /** Largest `/search_files` page. */
  searchMaxLimit: number;
  /** Largest `/browse` page. */
  browseMaxLimit: number;
  /** A `q` with fewer characters (code points, after trimming) matches nothing; 0 = any length matches. */
  minQueryChars: number;
}

const RULES: Record<ApiProfile, ProfileRules> = {
  base: {
    registerFolderUpsert: false,
    searchMaxLimit: SEARCH_MAX_LIMIT,
    browseMaxLimit: BROWSE_MAX_LIMIT,
    minQueryChars: 0,
  },
  hcfs: { registerFolderUpsert: true, searchMaxLimit: 200, browseMaxLimit: 200, minQueryChars: 3 },
};

/** The rules of `profile`. */
export function profileRules(profile: ApiProfile): ProfileRules {
  return RULES[profile];
}
