/**
 * Whether a webhook URL points into a private network: loopback, private, link-local, CGNAT,
 * unique-local, site-local and other non-public addresses (also as IPv6 tunnels carry them:
 * IPv4-mapped, NAT64, 6to4 and Teredo), and host names that only resolve inside a network
 * (localhost, *.local, *.internal, single labels). A trainer must not make the server POST there
 * (server-side request forgery) unless the operator allows it. Host names are judged by name
 * only: a Worker cannot resolve DNS before fetching.
 */

const PRIVATE_V4: readonly [number, number][] = [
  // [network, prefix length]
  [0x00000000, 8], // "this network"
  [0x0a000000, 8], // 10/8
  [0x64400000, 10], // 100.64/10 carrier-grade NAT
  [0x7f000000, 8], // loopback
  [0xa9fe0000, 16], // link-local (cloud metadata services)
  [0xac100000, 12], // 172.16/12
  [0xc0000000, 24], // 192.0.0/24 protocol assignments
  [0xc0a80000, 16], // 192.168/16
  [0xc6120000, 15], // 198.18/15 benchmarking
  [0xe0000000, 3], // multicast and reserved, 224/3
];

function ipv4Number(text: string): number | null {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) {
    return null;
  }
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

function privateV4(address: number): boolean {
  return PRIVATE_V4.some(([network, bits]) => {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    return (address & mask) >>> 0 === network;
  });
}

/**
 * The eight 16-bit groups of an IPv6 address as URL.hostname writes it (brackets removed; the
 * URL parser has already written an embedded IPv4 address in hex).
 */
function ipv6Groups(text: string): number[] | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => Number.parseInt(g, 16)));
  const head = parse(halves[0] ?? "");
  const rest = halves.length === 2 ? parse(halves[1] ?? "") : [];
  const known = head.length + rest.length;
  if (known > 8 || (halves.length === 1 && known !== 8)) return null;
  const groups = [...head, ...Array<number>(8 - known).fill(0), ...rest];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

function privateV6(groups: number[]): boolean {
  const [a = 0, , , , , f = 0, g = 0, h = 0] = groups;
  const zeros = (n: number) => groups.slice(0, n).every((x) => x === 0);
  if (zeros(8)) return true; // ::
  if (zeros(7) && h === 1) return true; // ::1
  if ((a & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  if ((a & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((a & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated, still routed)
  // Teredo (2001::/32): the client's IPv4 address is hidden in it, so none is trusted.
  if (a === 0x2001 && groups[1] === 0) return true;
  // 6to4 (2002:a.b.c.d::/48): a relay forwards to the embedded IPv4 address.
  if (a === 0x2002 && privateV4((((groups[1] ?? 0) << 16) | (groups[2] ?? 0)) >>> 0)) return true;
  if ((a & 0xff00) === 0xff00) return true; // multicast
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d) and
  // local-use NAT64 (64:ff9b:1::/48, RFC 8215; any address in it is a local translator's).
  const embedded = ((g << 16) | h) >>> 0;
  if (zeros(5) && (f === 0xffff || f === 0)) return privateV4(embedded);
  if (a === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((x) => x === 0)) {
    return privateV4(embedded);
  }
  if (a === 0x64 && groups[1] === 0xff9b && groups[2] === 1) return true;
  return false;
}

const PRIVATE_SUFFIXES = [".localhost", ".local", ".internal", ".home.arpa", ".lan"];

/** Why `url` is a private-network target, or null when it is a public one. */
export function privateTargetReason(url: string): string | null {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return "it is not a URL";
  }
  if (host.startsWith("[") && host.endsWith("]")) {
    const groups = ipv6Groups(host.slice(1, -1));
    if (groups === null) return "its IPv6 address cannot be read";
    return privateV6(groups) ? `${host} is a loopback, private or link-local address` : null;
  }
  const v4 = ipv4Number(host);
  if (v4 !== null) {
    return privateV4(v4) ? `${host} is a loopback, private or link-local address` : null;
  }
  const name = host.replace(/\.$/, "");
  if (name === "localhost" || PRIVATE_SUFFIXES.some((s) => name.endsWith(s))) {
    return `${host} names a host on the local network`;
  }
  if (!name.includes(".")) return `${host} is a single-label name that resolves inside a network`;
  return null;
}
