package web

import (
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/handlers"
)

// clientAddr resolves who is calling: the TCP peer, unless the peer is a
// trusted proxy, in which case X-Forwarded-For is read from the right and the
// first address not itself a trusted proxy is the client. Addresses a client
// wrote further left are never believed, so a client cannot pick its own.
func clientAddr(peer netip.Addr, xff string, trusted []netip.Prefix) netip.Addr {
	peer = peer.Unmap()
	if !inPrefixes(peer, trusted) || xff == "" {
		return peer
	}
	for rest := xff; ; {
		i := strings.LastIndexByte(rest, ',')
		a, err := netip.ParseAddr(strings.TrimSpace(rest[i+1:]))
		if err != nil {
			return peer // a garbled hop: believe nothing past it
		}
		a = a.Unmap()
		if !inPrefixes(a, trusted) {
			return a
		}
		peer = a
		if i < 0 {
			return peer
		}
		rest = rest[:i]
	}
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

var headerForwardedFor = headerKey(fiber.HeaderXForwardedFor)

// identify records the client's address for the limits and logs that follow.
func (s *Server) identify(c *fiber.Ctx) error {
	peer := peerAddr(c.Context().RemoteAddr())
	xff := ""
	if len(s.trusted) > 0 {
		xff = requestHeader(c, headerForwardedFor)
	}
	handlers.SetClientIP(c, clientAddr(peer, xff, s.trusted))
	return c.Next()
}
