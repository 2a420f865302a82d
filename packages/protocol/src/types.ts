/**
 * @module protocol/types
 * TypeScript types of the JSON bodies the service sends inside `{"Success": ...}`, derived from
 * their schemas in `packages/protocol/src/schemas.ts` (the one description of the contract): shared by the
 * server, which produces them, and the client library, which reads them. Byte arrays are JSON
 * arrays of integers (`number[]`); times are Unix seconds; sizes bytes.
 */
import type { Static } from "@sinclair/typebox";
import type * as S from "./schemas.ts";

/** A registered folder (docs/protocol.md#folders). */
export type RemoteFolderInfo = Static<typeof S.RemoteFolderInfo>;
/** `GET /list_folders/{base_address}` (docs/protocol.md#folders). */
export type ListFoldersResult = Static<typeof S.ListFoldersResult>;
/** `POST /register_folder` (docs/protocol.md#folders). */
export type RegisterFolderResult = Static<typeof S.RegisterFolderResult>;
/** `DELETE /unregister_folder` (docs/protocol.md#folders). */
export type UnregisterFolderResult = Static<typeof S.UnregisterFolderResult>;
/** A file of `/get_state` and `/browse` (docs/protocol.md#file-entries without folder fields; docs/protocol.md#sync-endpoints). */
export type RemoteFileEntry = Static<typeof S.RemoteFileEntry>;
/** A search result (docs/protocol.md#file-entries): a file entry plus its folder. */
export type SearchFileHit = Static<typeof S.SearchFileHit>;
/** Fields shared by paged listings. */
export type Page = Static<typeof S.Page>;
/** `GET /get_state/{ss58}/{folder_hash}` (docs/protocol.md#sync-endpoints). */
export type StateResult = Static<typeof S.StateResult>;
/** `GET /search_files/{ss58}` (docs/protocol.md#search). */
export type SearchResult = Static<typeof S.SearchResult>;
/** A subfolder of a `/browse` listing; counts are recursive. */
export type BrowseFolderEntry = Static<typeof S.BrowseFolderEntry>;
/** `GET /browse/{ss58}/{folder_hash}`: subfolders first, then files at `path`. */
export type BrowseResult = Static<typeof S.BrowseResult>;
/** `DELETE /delete/{ss58}/{folder_hash}/{file_id}` (docs/protocol.md#sync-endpoints). */
export type DeleteFileResult = Static<typeof S.DeleteFileResult>;
/** `POST /upload` and session finalize (docs/protocol.md#upload-result). */
export type UploadResult = Static<typeof S.UploadResult>;
/** `POST /upload/session` (docs/protocol.md#upload-sessions). */
export type SessionCreated = Static<typeof S.SessionCreated>;
/** `GET /upload/session/{id}/status` (docs/protocol.md#upload-sessions). */
export type SessionStatus = Static<typeof S.SessionStatus>;
/** `PUT /upload/session/{id}/chunk/{index}` (docs/protocol.md#upload-sessions). */
export type ChunkStored = Static<typeof S.ChunkStored>;
/** `DELETE /upload/session/{id}` (docs/protocol.md#upload-sessions). */
export type SessionDeleted = Static<typeof S.SessionDeleted>;
/** `GET /health` (docs/protocol.md#sync-endpoints; no envelope). */
export type HealthInfo = Static<typeof S.HealthInfo>;
/** The signed manifest as sent in `POST /upload/session` and the `manifest` part of `/upload`. */
export type ManifestBody = Static<typeof S.Manifest>;
/** `POST /upload/session` body (docs/protocol.md#upload-sessions). */
export type CreateSessionBody = Static<typeof S.CreateSessionBody>;
/** `POST /register_folder` body (docs/protocol.md#folders). */
export type RegisterFolderBody = Static<typeof S.RegisterFolderBody>;
/** `DELETE /unregister_folder` body (docs/protocol.md#folders). */
export type UnregisterFolderBody = Static<typeof S.UnregisterFolderBody>;
/** `GET /search_files/{ss58}` query parameters (docs/protocol.md#search). */
export type SearchQueryParams = Static<typeof S.SearchQuery>;
/** `GET /browse/{ss58}/{folder_hash}` query parameters. */
export type BrowseQueryParams = Static<typeof S.BrowseQuery>;
/** `GET /v1/capabilities` (docs/protocol.md#capabilities). */
export type Capabilities = Static<typeof S.Capabilities>;
/** `GET /v1/quota/{ss58}` (docs/protocol.md#quota). */
export type QuotaReport = Static<typeof S.QuotaReport>;
/** `GET /get_user_summary/{ss58}` (docs/protocol.md#summaries). */
export type UserSummary = Static<typeof S.UserSummary>;
/** `GET /get_file_type_summary/{ss58}` (docs/protocol.md#summaries). */
export type FileTypeSummary = Static<typeof S.FileTypeSummary>;
/** `GET /get_source_summary/{ss58}` (docs/protocol.md#summaries). */
export type SourceSummary = Static<typeof S.SourceSummary>;
/** `POST /v1/drive-invites` body (docs/drives.md). */
export type MintInviteBody = Static<typeof S.MintInviteBody>;
/** The answer of `POST /v1/drive-invites`. */
export type InviteMinted = Static<typeof S.InviteMinted>;
/** `GET /v1/drives/{folder_hash}/invites`. */
export type DriveInvites = Static<typeof S.DriveInvites>;
/** `GET /v1/drive-invites/{token}/meta`. */
export type InviteMeta = Static<typeof S.InviteMeta>;
/** The answer of `POST /v1/drive-invites/{token}/accept`. */
export type AcceptResult = Static<typeof S.AcceptResult>;
/** `GET /v1/drive-memberships`. */
export type Memberships = Static<typeof S.Memberships>;
/** `GET /v1/drives/{folder_hash}/members`. */
export type DriveMembers = Static<typeof S.DriveMembers>;
/** A member row (members listing, role change). */
export type DriveMember = Static<typeof S.DriveMember>;
/** A kept version (docs/versions.md). */
export type FileVersion = Static<typeof S.FileVersion>;
/** `GET /v1/versions/{ss58}/{folder_hash}/{file_id}` (docs/versions.md). */
export type FileVersionsResult = Static<typeof S.FileVersionsResult>;
/** `GET /v1/trash/{ss58}/{folder_hash}` (docs/versions.md). */
export type TrashResult = Static<typeof S.TrashResult>;
/** `POST /v1/versions/{ss58}/{folder_hash}/{file_id}/restore` (docs/versions.md). */
export type RestoreVersionResult = Static<typeof S.RestoreVersionResult>;
