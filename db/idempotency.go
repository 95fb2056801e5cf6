package db

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Idempotency keys (docs/OPERATIONS.md, "Abuse limits"): a client sends the same Idempotency-Key
// when it retries a grab, pay or cancel whose answer it lost, and gets the
// first answer again with nothing changed. The key travels in the context;
// a keyed operation runs a variant of its script that keeps its whole answer
// (refusals too) beside the item for IdempotencyTTL, in the same round trip
// and the same Redis slot as the change itself, so the answer and the change
// are stored together or not at all.

// IdempotencyTTL is how long a keyed answer is kept.
const IdempotencyTTL = 5 * time.Minute

type idempotencyCtxKey struct{}

// WithIdempotencyKey returns a context whose grab, pay or cancel is keyed by key.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	if key == "" {
		return ctx
	}
	return context.WithValue(ctx, idempotencyCtxKey{}, key)
}

// HasIdempotencyKey reports whether ctx carries an Idempotency-Key.
func HasIdempotencyKey(ctx context.Context) bool {
	key, _ := ctx.Value(idempotencyCtxKey{}).(string)
	return key != ""
}

// WithIdempotencyScope returns ctx whose Idempotency-Key, if it has one, is
// remembered apart from the same key sent by anyone else to the same
// operation: a merchant's refund runs the shopper's refund script, and must
// neither replay nor be replayed by the shopper's own keyed refund. The
// scope joins the key with a byte no client can send (ValidIdempotencyKey).
func WithIdempotencyScope(ctx context.Context, scope string) context.Context {
	key, _ := ctx.Value(idempotencyCtxKey{}).(string)
	if key == "" {
		return ctx
	}
	return context.WithValue(ctx, idempotencyCtxKey{}, scope+"\x00"+key)
}

type heldRefusalCtxKey struct{}

// WithHeldRefusal returns ctx carrying a refusal (the sale paused) that a
// keyed write answers unless its key was answered before: a retry of a
// write that was answered gets that answer again (an acknowledged grab's
// shopper learns of the order they hold); a new one gets err.
func WithHeldRefusal(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, heldRefusalCtxKey{}, err)
}

// HeldRefusal is the refusal ctx carries (WithHeldRefusal), or nil.
func HeldRefusal(ctx context.Context) error {
	err, _ := ctx.Value(heldRefusalCtxKey{}).(error)
	return err
}

// MaxRequestKey is the longest Idempotency-Key, X-Request-ID or gateway
// reference: model.RequestKey's ceiling (db/model/limits.go), kept here for
// ValidIdempotencyKey, below the model.
const MaxRequestKey = 64

// ValidIdempotencyKey reports whether key is 1–MaxRequestKey printable ASCII characters.
func ValidIdempotencyKey(key string) bool {
	if len(key) == 0 || len(key) > MaxRequestKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// KeyedRequestID is the request ID under which a keyed operation of one user
// is remembered (hex, so it fits every script's record format), and whether
// the context carries a key at all.
func KeyedRequestID(ctx context.Context, op string, userID int64) (string, bool) {
	key, _ := ctx.Value(idempotencyCtxKey{}).(string)
	if key == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(op + "\x00" + strconv.FormatInt(userID, 10) + "\x00" + key))
	return "k" + hex.EncodeToString(sum[:16]), true
}

// Memoize wraps a script body (top-level Lua ending in returns) so its whole
// answer (a string, as scripts return, or a table) is kept under the last key
// for ARGV[#ARGV] milliseconds, and a later
// run with the same last key returns that answer without running the body.
// keep is a Lua condition on res that says which answers are kept (not, say,
// "not loaded yet, load and ask again").
//
// A remembered answer is given back with a write (the memo set again, its
// expiry kept): a replay is a durable command like the first run, and the
// replica wait after it (rdb.Durable) covers this write, so it answers
// only once everything before it in the master's stream, the original
// change included, is on a replica. Without it a replay on a connection
// that wrote nothing would pass its wait at once and hand out, say, a 201
// for an order a failover could still take back.
func Memoize(body, keep string) string { return MemoizeReplay(body, keep, "") }

// MemoizeReplay is Memoize whose remembered answer, before it is given back,
// goes through replay: Lua statements that may change res (an answer that
// carries a figure of the moment, a goods' stock, carries today's, not the
// one of the first run: a replay announces nothing older than what was
// announced since).
func MemoizeReplay(body, keep, replay string) string {
	return "local function body()\n" + body + "\nend\n" + `
local memo = redis.call('GET', KEYS[#KEYS])
if memo then
	local ok, res = pcall(cjson.decode, memo)
	if ok and (type(res) == 'string' or type(res) == 'table') then
		redis.call('SET', KEYS[#KEYS], memo, 'KEEPTTL')
		` + replay + `
		return res
	end
end
local res = body()
if ` + keep + ` then redis.call('SET', KEYS[#KEYS], cjson.encode(res), 'PX', ARGV[#ARGV]) end
return res
`
}
