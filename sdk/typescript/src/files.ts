// files.ts: files and file collections in the mesh's object store
// (docs/protocol.md, "Files and collections"): read and store files by id,
// resolve spilled collections, spill large ones.

import { createHash, randomBytes } from "node:crypto";
import type { NatsConnection } from "@nats-io/nats-core";
import { Objm, type ObjectStore } from "@nats-io/obj";

import { Codes, MeshError, RetryableError, messageOf } from "./errors.js";
import type { Names } from "./names.js";
import type { FileCollection } from "./types.gen.js";

/** Collections whose ids, as a JSON array, are larger than this are spilled. */
export const spillThreshold = 256 << 10;
/** The object name prefix of spilled collections. */
export const collectionPrefix = "collections/";
/** The most file ids a spilled collection may resolve to by default. */
export const defaultMaxCollection = 100_000;

const base32 = "abcdefghijklmnopqrstuvwxyz234567";

/** newFileID returns "f-" and 20 lower-case base32 characters (100 random bits), as the Go side makes them. */
export function newFileID(): string {
  const b = randomBytes(13);
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of b) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < 20) {
      out += base32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return `f-${out}`;
}

/**
 * directInfo makes store read an object's info with a direct get that
 * names the object's subject ($JS.API.DIRECT.GET.<stream>.$O.<bucket>.M.<name>),
 * not STREAM.MSG.GET with the subject in the body: a secure mesh grants an
 * agent every client's bucket only through subjects of the object store
 * (docs/security.md, "Files"), and @nats-io/obj has no option for it.
 */
function directInfo(store: ObjectStore): ObjectStore {
  const jsm = (store as unknown as { jsm?: { streams?: { getMessage: unknown }; direct?: { getMessage: unknown } } }).jsm;
  if (jsm?.streams && jsm.direct && !(jsm.streams as { direct?: boolean }).direct) {
    const direct = jsm.direct as { getMessage(stream: string, q: unknown): Promise<unknown> };
    const streams = Object.create(jsm.streams) as { getMessage: unknown; direct: boolean };
    streams.getMessage = (stream: string, q: unknown) => direct.getMessage(stream, q);
    streams.direct = true;
    jsm.streams = streams;
  }
  return store;
}

/**
 * Files reads and writes the mesh's object store: the shared bucket
 * (mesh_files) and, for a task a client owns (forOwner), that client's
 * bucket (docs/security.md, "Files").
 */
export class Files {
  constructor(
    private readonly nc: NatsConnection,
    private readonly names: Names,
    private readonly maxCollection = defaultMaxCollection,
    private readonly owner?: string,
    private readonly stores = new Map<string, Promise<ObjectStore>>(), // opened buckets, shared with forOwner's
  ) {}

  /**
   * forOwner returns the files of a task client owner owns (its owner
   * extension): store writes into the owner's bucket when the mesh has one,
   * read looks there first, then in the shared bucket (refs made before
   * buckets had owners). Without an owner, these files.
   */
  forOwner(owner?: string): Files {
    return owner ? new Files(this.nc, this.names, this.maxCollection, owner, this.stores) : this;
  }

  private open(bucket = this.names.filesStore): Promise<ObjectStore> {
    let opened = this.stores.get(bucket);
    if (!opened) {
      opened = new Objm(this.nc).open(bucket);
      this.stores.set(bucket, opened);
      opened.catch(() => this.stores.delete(bucket));
    }
    return opened;
  }

  /** ownerStore is the owner's bucket, or undefined when there is no owner or it has no bucket (a plain mesh). */
  private async ownerStore(): Promise<ObjectStore | undefined> {
    if (!this.owner) return undefined;
    try {
      return directInfo(await this.open(this.names.clientFilesStore(this.owner)));
    } catch (err) {
      if (/not found/i.test(messageOf(err))) return undefined;
      throw err;
    }
  }

  /** read returns a file's content; a missing file is a not_found MeshError, a store that fails a RetryableError. */
  async read(id: string): Promise<Uint8Array> {
    let blob: Uint8Array | null;
    try {
      const own = await this.ownerStore();
      blob = own ? await own.getBlob(id) : null;
      blob ??= await (await this.open()).getBlob(id);
    } catch (err) {
      throw new RetryableError(`reading file ${id}: ${messageOf(err)}`);
    }
    if (!blob) throw new MeshError(Codes.notFound, `file ${id} is not in the object store ${this.names.filesStore}${this.owner ? ` nor in ${this.names.clientFilesStore(this.owner)}` : ""}`);
    return blob;
  }

  /** store writes content under a new file id and returns the id; filename and media_type go in its metadata. */
  async store(content: Uint8Array | string, meta: { filename?: string; media_type?: string } = {}): Promise<string> {
    const id = newFileID();
    const data = typeof content === "string" ? new TextEncoder().encode(content) : content;
    const metadata: Record<string, string> = { media_type: meta.media_type || (typeof content === "string" ? "text/plain; charset=utf-8" : "application/octet-stream") };
    if (meta.filename) metadata.filename = meta.filename;
    await ((await this.ownerStore()) ?? (await this.open())).putBlob({ name: id, metadata }, data);
    return id;
  }

  /** ids returns a collection's file ids, reading a spilled one from the store. */
  async ids(fc: FileCollection): Promise<string[]> {
    if (Array.isArray(fc.ids)) return fc.ids;
    const ref = fc.collection_ref;
    if (typeof ref !== "string" || !ref.startsWith(collectionPrefix) || ref.length === collectionPrefix.length) {
      throw new MeshError(Codes.invalidInput, `collection_ref ${JSON.stringify(ref)} is not a spilled collection (want ${collectionPrefix}<sha256>)`);
    }
    if (typeof fc.count === "number" && fc.count > this.maxCollection) {
      throw new MeshError(Codes.limitExceeded, `spilled collection ${ref} holds ${fc.count} file ids; this agent resolves at most ${this.maxCollection}`);
    }
    let blob: Uint8Array | null;
    try {
      blob = await (await this.open()).getBlob(ref);
    } catch (err) {
      throw new RetryableError(`resolving collection ${ref}: ${messageOf(err)}`);
    }
    if (!blob) throw new MeshError(Codes.notFound, `spilled collection ${JSON.stringify(ref)} is not in the object store ${this.names.filesStore}`);
    const ids = JSON.parse(new TextDecoder().decode(blob));
    if (!Array.isArray(ids) || (typeof fc.count === "number" && ids.length !== fc.count)) {
      throw new MeshError(Codes.invalidInput, `spilled collection ${ref}: the stored ids do not match its count ${fc.count}`);
    }
    return ids;
  }

  /** collection builds a FILE_IDS value of ids, spilled to the store when its ids pass 256 KiB. */
  async collection(ids: string[], contentType?: string): Promise<FileCollection> {
    const json = JSON.stringify(ids);
    const bytes = new TextEncoder().encode(json);
    if (bytes.length <= spillThreshold) {
      const fc: FileCollection = { ids, count: ids.length };
      if (contentType) fc.content_type = contentType;
      return fc;
    }
    const ref = collectionPrefix + createHash("sha256").update(bytes).digest("hex");
    const store = await this.open();
    const info = await store.info(ref);
    if (!info || info.deleted || info.size !== bytes.length) {
      await store.putBlob(
        { name: ref, description: "spilled file collection", metadata: { count: String(ids.length), content_type: contentType || "" } },
        bytes,
      );
    }
    const fc: FileCollection = { collection_ref: ref, count: ids.length };
    if (contentType) fc.content_type = contentType;
    return fc;
  }
}
