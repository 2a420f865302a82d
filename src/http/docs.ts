/**
 * @module http/docs
 * OpenAPI shapes of requests and responses for the `/swagger` page. Documentation only: the
 * controllers validate input themselves so that every error uses the spec's codes.
 */
import { type DocumentDecoration, t } from "elysia";

const Bytes32 = t.Array(t.Integer({ minimum: 0, maximum: 255 }), {
  minItems: 32,
  maxItems: 32,
  description: "32 bytes as integers",
});
const ByteArray = t.Array(t.Integer({ minimum: 0, maximum: 255 }), { description: "bytes as integers" });
const FolderHash = t.String({ pattern: "^[0-9a-f]{16}$", description: "first 16 hex of SHA-256(label)" });

/** `{"Error": {...}}` */
export const ErrorEnvelope = t.Object({ Error: t.Object({ error: t.String(), message: t.String() }) });
/** `{"Conflict": {...}}` (complement §1) */
export const ConflictEnvelope = t.Object({
  Conflict: t.Object({
    error: t.String(),
    message: t.String(),
    current_revision_id: t.Union([Bytes32, t.Null()]),
    current_revision_seq: t.Integer(),
  }),
});

/** The signed manifest (complement §1). */
export const Manifest = t.Object({
  ss58_address: t.String({ description: "owner (alias user_id)" }),
  folder_hash: FolderHash,
  ciphertext_hash: t.String({ pattern: "^[0-9a-f]{64}$", description: "BLAKE3 of the whole ciphertext" }),
  size_bytes: t.Integer({ minimum: 0, description: "plaintext bytes" }),
  timestamp: t.Integer({ description: "client Unix seconds" }),
  signature: t.Array(t.Integer(), {
    minItems: 64,
    maxItems: 64,
    description: "Ed25519 over the ToS sentence",
  }),
  signing_key: Bytes32,
  path_hash: Bytes32,
  salted_hash: Bytes32,
  revision_seq: t.Integer({ minimum: 0 }),
  base_revision_id: t.Union([Bytes32, t.Null()]),
  encrypted_path: ByteArray,
  file_name: t.Union([t.String(), t.Null()]),
  relative_path: t.Union([t.String(), t.Null()]),
  source: t.Optional(t.Union([t.String(), t.Null()])),
  attributes: t.Optional(
    t.Union([t.Array(t.Integer({ minimum: 0, maximum: 255 }), { minItems: 1, maxItems: 4096 }), t.Null()], {
      description:
        "esync extension: opaque client-encrypted file attributes, returned unchanged by /get_state",
    }),
  ),
});

/** RemoteFileEntry (spec §2.5 without folder fields). */
export const RemoteFileEntry = t.Object({
  path_hash: Bytes32,
  salted_hash: Bytes32,
  size_bytes: t.Integer(),
  revision_seq: t.Integer(),
  revision_id: Bytes32,
  encrypted_path: ByteArray,
  file_name: t.Union([t.String(), t.Null()]),
  relative_path: t.Union([t.String(), t.Null()]),
  store_hash: t.Union([t.String(), t.Null()]),
  chunk_hashes: t.Union([t.Array(t.String()), t.Null()]),
  created_at: t.Integer(),
  updated_at: t.Integer(),
  attributes: t.Optional(ByteArray),
});

/** UploadResult (spec §2.4). */
export const UploadResult = t.Object({
  upload_id: t.String(),
  timestamp: t.Integer(),
  revision_id: Bytes32,
  created_at: t.Integer(),
  updated_at: t.Integer(),
});

/** RemoteFolderInfo (spec §2.2). */
export const Folder = t.Object({
  label: t.String(),
  folder_hash: FolderHash,
  file_count: t.Integer(),
  total_bytes: t.Integer(),
  created_at: t.Integer(),
  updated_at: t.Integer(),
  device_name: t.String(),
});

/** Wraps a schema in the Success envelope. */
export function successOf(schema: ReturnType<typeof t.Object>) {
  return t.Object({ Success: schema });
}

type Schema = ReturnType<typeof t.Object>;

/**
 * An OpenAPI operation description: summary, tag, optional JSON request body, the 200 shape
 * and the error statuses it can answer.
 */
export function op(
  tag: string,
  summary: string,
  ok: Schema | null,
  errors: number[],
  body?: Schema,
  description?: string,
): DocumentDecoration {
  const responses: Record<string, unknown> = {};
  if (ok)
    responses["200"] = { description: "Success", content: { "application/json": { schema: successOf(ok) } } };
  for (const s of errors) {
    responses[String(s)] = {
      description: `Error ${s}`,
      content: {
        "application/json": {
          schema: s === 409 ? t.Union([ErrorEnvelope, ConflictEnvelope]) : ErrorEnvelope,
        },
      },
    };
  }
  return {
    tags: [tag],
    summary,
    description,
    security: [{ bearer: [] }],
    ...(body ? { requestBody: { required: true, content: { "application/json": { schema: body } } } } : {}),
    responses,
  } as DocumentDecoration;
}
