// The part of the kit YOU REPLACE: a small streaming decoder and an encoder for the frameproof
// `standard` protocol (spec/standard.md). The harness (main.ts) only uses Decoder (constructor,
// feed, finish), encode, Frame and CodecError; keep those, or adapt the few lines in main.ts that
// call them, and put your own codec behind them.
//
// ======================== YOUR CODEC HERE ========================

/** The spec's default limit (STD-LIM-1, STD-LIM-2): 10 MiB. */
export const DEFAULT_MAX_PAYLOAD = 10 * 1024 * 1024;

/** One `standard` frame: the whole flag byte, the sequence byte and the payload. */
export interface Frame {
  flag: number;
  sequence: number;
  payload: Uint8Array;
}

/** A classified protocol error: the requirement the input breaks and the stream offset where the
 * offending frame starts (spec/standard.md §8a). Encoder errors have offset 0. */
export class CodecError {
  constructor(readonly requirement: string, readonly offset: number, readonly message: string) {}
}

/** What one feed produced: the frames it completed, in order, and the error that stopped the
 * stream, if any (frames before the offending one are still delivered, STD-STR-4). */
export interface FeedResult {
  frames: Frame[];
  error?: CodecError;
}

function u16le(b: Uint8Array, i: number): number {
  return b[i] | (b[i + 1] << 8);
}

function u32le(b: Uint8Array, i: number): number {
  return (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16)) + b[i + 3] * 0x1000000;
}

/** A streaming decoder: feed it the bytes of one connection in any split. */
export class Decoder {
  private readonly max: number;
  private buf = new Uint8Array(4096); // bytes received but not yet delivered: buf[0, len)
  private len = 0;
  private base = 0; // stream offset of buf[0]
  private error?: CodecError; // set after the first error: the stream is dead (STD-STR-4)

  /** maxPayload 0 means the default (10 MiB). */
  constructor(maxPayload = 0) {
    this.max = maxPayload || DEFAULT_MAX_PAYLOAD;
  }

  /** Adds one chunk; returns every frame it completed (STD-STR-1, STD-STR-2). */
  feed(chunk: Uint8Array): FeedResult {
    if (this.error) return { frames: [], error: this.error };
    this.append(chunk);
    const frames: Frame[] = [];
    const b = this.buf;
    let pos = 0; // start of the next frame in buf
    for (;;) {
      const avail = this.len - pos;
      if (avail < 4) break; // header incomplete: wait
      const flag = b[pos];
      const sequence = b[pos + 1];
      let n = u16le(b, pos + 2); // STD-HDR-1: u16 little-endian
      let hlen = 4;
      if (n === 0xffff) {
        // STD-LEN-2: the extended length follows
        if (avail < 8) break;
        n = u32le(b, pos + 4);
        hlen = 8;
        if (n < 0xffff) return this.fail(frames, "STD-LEN-3", pos, "non-canonical extended length");
        if (n >= 0x80000000) return this.fail(frames, "STD-LEN-4", pos, "extended length has bit 31 set");
      }
      // STD-LIM-1: decided by the header alone, before any payload arrives
      if (n > this.max) return this.fail(frames, "STD-LIM-1", pos, "payload above the limit");
      if (avail - hlen < n) break; // payload incomplete: wait
      frames.push({ flag, sequence, payload: b.slice(pos + hlen, pos + hlen + n) }); // slice copies
      pos += hlen + n; // STD-STR-5: the next byte starts the next frame
    }
    // drop the delivered bytes, keep the unfinished frame
    b.copyWithin(0, pos, this.len);
    this.len -= pos;
    this.base += pos;
    return { frames };
  }

  /** The stream has ended: a partial frame is an error (STD-STR-3). */
  finish(): CodecError | undefined {
    if (this.error) return this.error;
    if (this.len > 0) {
      this.error = new CodecError("STD-STR-3", this.base, "stream ended inside a frame");
    }
    return this.error;
  }

  private fail(frames: Frame[], requirement: string, pos: number, message: string): FeedResult {
    this.error = new CodecError(requirement, this.base + pos, message);
    this.buf = new Uint8Array(0);
    this.len = 0;
    return { frames, error: this.error };
  }

  private append(chunk: Uint8Array): void {
    if (this.len + chunk.length > this.buf.length) {
      // grow by doubling, so that a frame fed one byte at a time costs linear time
      const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.len + chunk.length));
      bigger.set(this.buf.subarray(0, this.len));
      this.buf = bigger;
    }
    this.buf.set(chunk, this.len);
    this.len += chunk.length;
  }
}

/** Encodes one frame, or refuses it (STD-LEN-4, STD-LIM-2). maxPayload 0 means the default. */
export function encode(frame: Frame, maxPayload = 0): Uint8Array | CodecError {
  const max = maxPayload || DEFAULT_MAX_PAYLOAD;
  const n = frame.payload.length;
  if (n >= 0x80000000) return new CodecError("STD-LEN-4", 0, "payload of 2^31 bytes or more");
  if (n > max) return new CodecError("STD-LIM-2", 0, "payload above the limit");
  const hlen = n < 0xffff ? 4 : 8; // STD-LEN-1: short form below 65535 bytes
  const out = new Uint8Array(hlen + n);
  const view = new DataView(out.buffer);
  out[0] = frame.flag; // STD-HDR-2..4: flag and sequence written verbatim
  out[1] = frame.sequence;
  if (hlen === 4) {
    view.setUint16(2, n, true);
  } else {
    view.setUint16(2, 0xffff, true); // STD-LEN-2: FF FF + u32 little-endian
    view.setUint32(4, n, true);
  }
  out.set(frame.payload, hlen);
  return out;
}

// ====================== END OF YOUR CODEC ========================
