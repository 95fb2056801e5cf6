package rdb

import (
	"crypto/rand"
	"encoding/hex"
)

// NewRequestID returns a random ID for one grab request; grab scripts
// remember it so that a command go-redis sends again is not applied twice.
func NewRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
