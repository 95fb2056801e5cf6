package account

import (
	"net/netip"
	"strings"
)

// Redis keys of the accounts. Each sign-in subject is its own item with its
// own hash tag; the revocation record is one item of two keys.

// accountFailsKey is the failed sign-in count and lock of one account (hash: n, until).
func accountFailsKey(username string) string {
	return "{login:acct:" + strings.ToLower(username) + "}:fail"
}

// addressFailsKey is the failed sign-in count and lock of one client address (hash: n, until).
func addressFailsKey(addr netip.Addr) string { return "{login:addr:" + addr.String() + "}:fail" }

// revokedSessionsKey holds the ended sessions (zset: session ID scored by its token's expiry, unix s).
func revokedSessionsKey() string { return "{revocations}:sessions" }

// revokedUsersKey holds the per-user cut-offs (hash: user ID → sessions issued before are void, unix µs).
func revokedUsersKey() string { return "{revocations}:users" }
