// Package account holds the accounts: users and their reminder settings,
// sign-in with its backoff per account and address, password changes, the
// bcrypt pool, and the signed tokens of sessions with their revocations.
package account

import (
	"github.com/seckill/seckill/db/backend"
	"golang.org/x/crypto/bcrypt"
)

// Service is the accounts over the shared backend: users live in SQLite,
// sign-in backoff and revocations in Redis.
type Service struct {
	*backend.Backend
	// Revocations ends sessions (password changes); nil writes to Redis alone.
	Revocations *Revocations
	// Locales keeps the accounts' picked languages in memory (a web
	// process); nil reads each from the store.
	Locales *Locales
	// Hashes runs bcrypt with bounded concurrency.
	Hashes *HashPool
	// BcryptCost is the password hashing cost; 0 means bcrypt's default (tests lower it).
	BcryptCost int
	// WebhookAllowPrivate accepts webhook URLs on non-global addresses (WEBHOOK_ALLOW_PRIVATE).
	WebhookAllowPrivate bool
}

// New returns the accounts over b with the default bcrypt pool.
func New(b *backend.Backend) *Service {
	return &Service{Backend: b, Hashes: DefaultHashPool()}
}

func (s *Service) bcryptCost() int {
	if s.BcryptCost == 0 {
		return bcrypt.DefaultCost
	}
	return s.BcryptCost
}
