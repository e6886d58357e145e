// Which addresses a tenant-supplied URL may reach: public unicast only. The
// server runs next to databases, metadata services and admin ports that
// answer loopback and private addresses, so a URL that resolves to any of
// them is refused (SSRF). IPv4-mapped, -compatible and NAT64 IPv6 forms are
// judged by the IPv4 address they carry.
import { BlockList, isIPv4, isIPv6 } from "node:net";

const blocked = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8], // RFC 1918
  ["100.64.0.0", 10], // CGNAT (also Alibaba's metadata 100.100.100.200)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata 169.254.169.254)
  ["172.16.0.0", 12], // RFC 1918
  ["192.0.0.0", 24], // IETF protocol assignments (Oracle metadata 192.0.0.192)
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // RFC 1918
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["100::", 64], // discard
  ["2001::", 23], // IETF protocol assignments (Teredo, ORCHID, …)
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4: carries an IPv4 address of any kind
  ["fc00::", 7], // unique local (AWS metadata fd00:ec2::254)
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const) {
  blocked.addSubnet(net, prefix, "ipv6");
}

/** The IPv4 address an IPv6 address stands for (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d), if any. */
function embeddedIpv4(address: string): string | null {
  const groups = expandIpv6(address);
  if (!groups) return null;
  const zero = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  const mapped = zero(0, 5) && groups[5] === 0xffff;
  const compatible = zero(0, 6) && (groups[6] !== 0 || groups[7] > 1);
  const nat64 = groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6);
  const nat64Local = groups[0] === 0x64 && groups[1] === 0xff9b && groups[2] === 1;
  if (!mapped && !compatible && !nat64 && !nat64Local) return null;
  return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join(".");
}

/** The eight 16-bit groups of an IPv6 address (dotted IPv4 tail allowed), or null. */
function expandIpv6(address: string): number[] | null {
  let text = address.toLowerCase().replace(/%.*$/, "");
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1].split(".").map(Number);
    text = `${text.slice(0, -dotted[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, null];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const fill = tail === null ? 0 : 8 - left.length - right.length;
  if (fill < 0) return null;
  const groups = [...left, ...Array<string>(fill).fill("0"), ...right].map((g) => Number.parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

/** True when a tenant's URL may connect to this IP address. */
export function isPublicAddress(address: string): boolean {
  if (isIPv4(address)) return !blocked.check(address, "ipv4");
  if (!isIPv6(address)) return false;
  const v4 = embeddedIpv4(address);
  if (v4 !== null) return isPublicAddress(v4);
  return !blocked.check(address, "ipv6");
}
