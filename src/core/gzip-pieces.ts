/**
 * One gzip stream assembled from pieces compressed at different times. A piece is raw deflate
 * ended by a sync flush: byte-aligned and not final, so pieces can follow each other in one
 * deflate stream (none refers back into another). A large group is compressed once, at ingest,
 * and a batch of such groups is sent to a gzip client without compressing anything again: a
 * header, the stored pieces with the separators between them, a final block, and a trailer whose
 * CRC-32 is combined from the pieces' own. The result is a single gzip member, which every
 * client decodes (concatenated members are not).
 */
import { constants, crc32, deflateRawSync, inflateRawSync } from "node:zlib";

/** Compression level of stored pieces and of pieces made while sending: speed over size. */
const LEVEL = 1;

/** A piece: raw deflate data, and the CRC-32 and length of what it inflates to. */
export interface DeflatePiece {
  data: Uint8Array;
  crc32: number;
  length: number;
}

export function deflatePiece(raw: Uint8Array): DeflatePiece {
  const data = deflateRawSync(raw, { level: LEVEL, finishFlush: constants.Z_SYNC_FLUSH });
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    crc32: crc32(raw),
    length: raw.byteLength,
  };
}

/** What a piece's data inflates to (a piece has no final block, so inflation stops at its end). */
export function inflatePiece(data: Uint8Array): Uint8Array {
  const raw = inflateRawSync(data, { finishFlush: constants.Z_SYNC_FLUSH });
  return new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
}

// Magic, deflate, no flags, no mtime, no extra flags, unknown OS (RFC 1952 §2.3).
const HEADER = new Uint8Array([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
// An empty final block with fixed Huffman codes: what zlib writes to finish an empty stream.
const FINAL_BLOCK = new Uint8Array([0x03, 0x00]);

/** Builds one gzip member from pieces, in order. */
export class GzipAssembler {
  private crc = 0;
  private length = 0;
  private started = false;

  /** The bytes to send for this piece (the header first, before the first one). */
  piece(piece: DeflatePiece): Uint8Array[] {
    this.crc = this.started ? crc32Combine(this.crc, piece.crc32, piece.length) : piece.crc32;
    this.length += piece.length;
    const out = this.started ? [piece.data] : [HEADER, piece.data];
    this.started = true;
    return out;
  }

  /** Raw bytes compressed now (separators, and payloads not stored compressed). */
  raw(bytes: Uint8Array): Uint8Array[] {
    return this.piece(deflatePiece(bytes));
  }

  /** The final block and the trailer (CRC-32 and length modulo 2^32, little-endian). */
  end(): Uint8Array[] {
    const head = this.started ? [] : [HEADER];
    this.started = true;
    const trailer = new Uint8Array(8);
    const view = new DataView(trailer.buffer);
    view.setUint32(0, this.crc >>> 0, true);
    view.setUint32(4, this.length >>> 0, true);
    return [...head, FINAL_BLOCK, trailer];
  }
}

// CRC-32 of A followed by B from crc(A), crc(B) and len(B): zlib's crc32_combine, with the
// polynomial's shift operator as 32×32 matrices over GF(2).
function gf2Times(matrix: Uint32Array, vector: number): number {
  let sum = 0;
  for (let i = 0; vector !== 0; i++, vector >>>= 1) {
    if (vector & 1) sum ^= matrix[i]!;
  }
  return sum >>> 0;
}

function gf2Square(square: Uint32Array, matrix: Uint32Array): void {
  for (let n = 0; n < 32; n++) square[n] = gf2Times(matrix, matrix[n]!);
}

export function crc32Combine(crc1: number, crc2: number, length2: number): number {
  if (length2 <= 0) return crc1 >>> 0;
  const even = new Uint32Array(32);
  const odd = new Uint32Array(32);
  odd[0] = 0xedb88320; // the reversed CRC-32 polynomial: one zero bit
  for (let n = 1, row = 1; n < 32; n++, row <<= 1) odd[n] = row;
  gf2Square(even, odd); // two zero bits
  gf2Square(odd, even); // four zero bits
  let crc = crc1 >>> 0;
  let len = length2;
  // Apply len2 zero bytes to crc1 (the first squaring above gives one zero byte).
  do {
    gf2Square(even, odd);
    if (len & 1) crc = gf2Times(even, crc);
    len = Math.floor(len / 2);
    if (len === 0) break;
    gf2Square(odd, even);
    if (len & 1) crc = gf2Times(odd, crc);
    len = Math.floor(len / 2);
  } while (len !== 0);
  return (crc ^ crc2) >>> 0;
}
