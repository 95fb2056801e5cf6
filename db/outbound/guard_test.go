package outbound_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/outbound"
)

// globalCases are addresses with what GlobalUnicast must say of them.
var globalCases = []struct {
	addr string
	want bool
}{
	// global unicast
	{"8.8.8.8", true},
	{"1.1.1.1", true},
	{"93.184.215.14", true},
	{"100.63.255.255", true}, // just below CGNAT
	{"100.128.0.0", true},    // just above CGNAT
	{"198.20.0.1", true},     // just above benchmarking
	{"223.255.255.255", true},
	{"2606:4700:4700::1111", true},
	{"2001:4860:4860::8888", true},
	{"::ffff:8.8.8.8", true},   // IPv4-mapped global
	{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
	{"2002:808:808::1", true},  // 6to4 of 8.8.8.8
	{"2001:4:112::1", true},    // AS112, outside Teredo
	{"2a00:1450:4001:80b::200e", true},

	// IPv4 refused
	{"0.0.0.0", false},
	{"0.1.2.3", false},
	{"10.0.0.1", false},
	{"100.64.0.1", false},
	{"100.100.100.200", false}, // cloud metadata
	{"100.127.255.255", false},
	{"127.0.0.1", false},
	{"127.255.255.254", false},
	{"169.254.169.254", false},
	{"172.16.0.1", false},
	{"172.31.255.255", false},
	{"192.0.0.8", false},
	{"192.0.2.1", false},
	{"192.88.99.1", false},
	{"192.168.1.1", false},
	{"198.18.0.1", false},
	{"198.19.255.255", false},
	{"198.51.100.7", false},
	{"203.0.113.10", false},
	{"224.0.0.1", false},
	{"239.255.255.250", false},
	{"240.0.0.1", false},
	{"255.255.255.255", false},

	// IPv6 refused
	{"::", false},
	{"::1", false},
	{"100::1", false},            // discard
	{"fc00::1", false},           // ULA
	{"fd12:3456:789a::1", false}, // ULA
	{"fe80::1", false},           // link-local
	{"fe80::1%eth0", false},      // zoned
	{"febf::1", false},           // link-local, top
	{"fec0::1", false},           // site-local
	{"ff02::1", false},           // multicast
	{"ff0e::1", false},           // global-scope multicast
	{"2001:db8::1", false},       // documentation
	{"3fff::1", false},           // documentation (RFC 9637)
	{"2001::1", false},           // Teredo
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false},
	{"2001:2::1", false}, // benchmarking
	{"4000::1", false},   // outside 2000::/3

	// IPv4 embedded in IPv6
	{"::ffff:127.0.0.1", false},
	{"::ffff:10.0.0.1", false},
	{"::ffff:169.254.169.254", false},
	{"::ffff:100.100.100.200", false},
	{"::127.0.0.1", false}, // IPv4-compatible
	{"::8.8.8.8", false},   // IPv4-compatible, deprecated: refused outright
	{"::169.254.169.254", false},
	{"64:ff9b::a9fe:a9fe", false}, // NAT64 of 169.254.169.254
	{"64:ff9b::7f00:1", false},
	{"64:ff9b::a00:1", false},
	{"64:ff9b::6464:64c8", false}, // NAT64 of 100.100.100.200
	{"64:ff9b:1::808:808", false}, // local-use NAT64: refused outright
	{"64:ff9b:1:a9fe:a9fe::", false},
	{"2002:7f00:1::1", false}, // 6to4 of 127.0.0.1
	{"2002:a9fe:a9fe::", false},
	{"2002:a00:1::1", false},
	{"2002:c612:1::1", false}, // 6to4 of 198.18.0.1
	{"2002:ffff:ffff::1", false},
}

func TestWebhookGlobalUnicast(t *testing.T) {
	for _, c := range globalCases {
		a, err := netip.ParseAddr(c.addr)
		if err != nil {
			t.Fatalf("bad case %q: %v", c.addr, err)
		}
		if got := outbound.GlobalUnicast(a); got != c.want {
			t.Errorf("GlobalUnicast(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
	if outbound.GlobalUnicast(netip.Addr{}) {
		t.Error("GlobalUnicast(zero Addr) = true, want false")
	}
}

// ValidateWebhookURL applies the rule to IP literals and resolved names, and
// refuses what is not a plain http(s) URL whether private addresses are
// allowed or not.
func TestWebhookValidateURL(t *testing.T) {
	ctx := context.Background()
	for _, c := range globalCases {
		host := c.addr
		if strings.Contains(host, ":") {
			host = "[" + strings.ReplaceAll(host, "%", "%25") + "]"
		}
		raw := "http://" + host + ":8080/hook"
		if err := account.ValidateWebhookURL(ctx, raw, false); (err == nil) != c.want {
			t.Errorf("ValidateWebhookURL(%s) = %v, want accepted %v", raw, err, c.want)
		} else if err != nil && db.ErrorCode(err) != db.EINVALID {
			t.Errorf("ValidateWebhookURL(%s) = %v, want code invalid", raw, err)
		}
		if err := account.ValidateWebhookURL(ctx, raw, true); err != nil {
			t.Errorf("ValidateWebhookURL(%s, allowPrivate) = %v", raw, err)
		}
	}
	for _, raw := range []string{
		"http://localhost/hook", // a name that resolves to loopback
		"https://localhost./hook",
	} {
		if err := account.ValidateWebhookURL(ctx, raw, false); db.ErrorCode(err) != db.EINVALID {
			t.Errorf("ValidateWebhookURL(%s) = %v, want invalid", raw, err)
		}
	}
	for _, raw := range []string{
		"ftp://8.8.8.8/x",
		"file:///etc/passwd",
		"http:///hook",
		"http://:80/hook",
		"https://user:pass@8.8.8.8/hook",
		"https://user@8.8.8.8/hook",
		"https://8.8.8.8/" + strings.Repeat("a", account.MaxWebhookURL),
		"gopher://8.8.8.8:70/_",
	} {
		for _, allow := range []bool{false, true} {
			if err := account.ValidateWebhookURL(ctx, raw, allow); db.ErrorCode(err) != db.EINVALID {
				t.Errorf("ValidateWebhookURL(%.60s, allowPrivate %v) = %v, want invalid", raw, allow, err)
			}
		}
	}
	if long := "https://8.8.8.8/" + strings.Repeat("a", account.MaxWebhookURL-len("https://8.8.8.8/")); account.ValidateWebhookURL(ctx, long, false) != nil {
		t.Error("a URL of exactly MaxWebhookURL bytes was refused")
	}
}
