package outbound

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// GlobalUnicast reports whether a webhook may be sent to a: only addresses
// that are global unicast on the public Internet pass.
//
// The rule, which account.ValidateWebhookURL applies to every address a webhook host
// resolves to and the webhook dialer to every address it connects to (unless
// WEBHOOK_ALLOW_PRIVATE), refuses:
//   - IPv4: 0.0.0.0/8 (with the unspecified address), 10/8, 172.16/12 and
//     192.168/16 (RFC 1918), 100.64/10 (CGNAT, with cloud metadata at
//     100.100.100.200), 127/8 loopback, 169.254/16 link-local, 192.0.0.0/24,
//     the documentation nets 192.0.2/24, 198.51.100/24 and 203.0.113/24,
//     192.88.99/24 (6to4 relays), 198.18/15 benchmarking, 224/4 multicast and
//     240/4 reserved (with the broadcast address 255.255.255.255);
//   - IPv6: anything outside 2000::/3, the only range with global unicast
//     today (so ::, ::1, 100::/64 discard, fc00::/7 ULA, fe80::/10 link-local,
//     fec0::/10 site-local and ff00::/8 multicast), and inside it 2001::/32
//     Teredo, 2001:2::/48 benchmarking, 2001:db8::/32 and 3fff::/20
//     documentation; any address with a zone;
//   - the IPv6 forms that carry an IPv4 address, judged by the address they
//     carry: IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d and 6to4
//     2002:AABB:CCDD::/48; IPv4-compatible ::a.b.c.d (deprecated) and the
//     local-use NAT64 prefix 64:ff9b:1::/48 (where the IPv4 address may sit
//     at any of several offsets) are refused outright.
func GlobalUnicast(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if a.Is4() {
		return globalIPv4(a)
	}
	b := a.As16()
	switch {
	case a.Is4In6():
		return globalIPv4(a.Unmap())
	case nat64.Contains(a):
		return globalIPv4(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(a):
		return globalIPv4(netip.AddrFrom4([4]byte(b[2:6])))
	case !globalUnicast6.Contains(a):
		return false // ::/8 (IPv4-compatible, ::, ::1), 64:ff9b:1::/48, ULA, link-local, multicast, ...
	}
	for _, p := range refused6 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

func globalIPv4(a netip.Addr) bool {
	for _, p := range refused4 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

var (
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	globalUnicast6 = netip.MustParsePrefix("2000::/3")

	refused4 = prefixes(
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
	)
	refused6 = prefixes("2001::/32", "2001:2::/48", "2001:db8::/32", "3fff::/20")
)

func prefixes(ps ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ps))
	for i, p := range ps {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// ErrNotGlobal is a webhook address refused by GlobalUnicast.
var ErrNotGlobal = errors.New("not a global unicast address")

// Dialer returns a dialer that, unless allowPrivate, refuses to
// connect to an address GlobalUnicast refuses. The check runs on the address
// actually dialled, after the name was resolved for this very connection, so
// a host that resolves differently now than when its URL was accepted (DNS
// rebinding) cannot reach an internal address.
func Dialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{Timeout: WebhookTimeout}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !GlobalUnicast(ap.Addr()) {
				return fmt.Errorf("webhook address %s: %w", address, ErrNotGlobal)
			}
			return nil
		}
	}
	return d
}
