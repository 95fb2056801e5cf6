package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
)

// A keyed write that is one script keeps its answer in the script
// (db.Memoize). A write that checks first and then changes (the desk's
// refund reads the order, refuses what is not paid, then runs the refund)
// cannot rely on that alone: a retry would be checked again, and its own
// success would refuse it. Keyed remembers such a write's whole answer and
// answers a retry with it before any check runs.

// keyedAnswer is a keyed write's remembered answer: its value, or the
// domain error it answered.
type keyedAnswer struct {
	Value   json.RawMessage `json:"value,omitempty"`
	Code    string          `json:"code,omitempty"`
	Message string          `json:"message,omitempty"`
	Fields  db.FieldErrors  `json:"fields,omitempty"`
}

// keyedAnswerKey holds the remembered answer of the keyed request req
// (db.KeyedRequestID).
func keyedAnswerKey(req string) string { return "{keyed:" + req + "}:answer" }

// Keyed runs write under ctx's Idempotency-Key, when it has one, at most
// once per key, user and op for db.IdempotencyTTL: a later call answers
// what the first answered, value or refusal, without running write, and
// says it replayed. Invalid input is not remembered (nothing was tried),
// nor is an answer that says nothing of what happened (an internal error,
// a backend that did not answer, a rate limit): a retry runs write again; write should then carry the key
// into its script (db.WithIdempotencyScope), whose own memo answers for a
// change the lost answer hid. Without a key write simply runs.
func Keyed[T any](ctx context.Context, b *Backend, op string, userID int64, write func(context.Context) (T, error)) (v T, replayed bool, err error) {
	req, keyed := db.KeyedRequestID(ctx, op, userID)
	if !keyed {
		v, err = write(ctx)
		return v, false, err
	}
	key := keyedAnswerKey(req)
	raw, err := b.Redis.Get(ctx, key).Bytes()
	switch {
	case err == nil:
		var a keyedAnswer
		if jerr := json.Unmarshal(raw, &a); jerr != nil {
			return v, false, fmt.Errorf("%s: its remembered answer: %w", op, jerr)
		}
		if a.Code != "" {
			return v, true, a.err()
		}
		if jerr := json.Unmarshal(a.Value, &v); jerr != nil {
			return v, false, fmt.Errorf("%s: its remembered answer: %w", op, jerr)
		}
		return v, true, nil
	case !errors.Is(err, redis.Nil):
		return v, false, fmt.Errorf("%s: its remembered answer: %w", op, err)
	}
	if held := db.HeldRefusal(ctx); held != nil {
		// A door let the request on only for a retry of one answered
		// before (a read-only pause): this key was not, so the refusal
		// stands, and is not remembered (it says nothing of the write).
		return v, false, held
	}
	v, err = write(ctx)
	a, ok := answerOf(v, err)
	if !ok {
		return v, false, err
	}
	enc, jerr := json.Marshal(a)
	if jerr != nil {
		return v, false, fmt.Errorf("%s: remember its answer: %w", op, jerr)
	}
	// The change is made and answered whether or not this lands: a memo
	// lost leaves the retry to write's own script memo.
	dctx, c := b.Durable(context.WithoutCancel(ctx))
	if serr := c.Set(dctx, key, enc, db.IdempotencyTTL).Err(); serr != nil {
		b.Log.Warn("remember a keyed answer", "op", op, "err", serr)
	}
	return v, false, err
}

// answerOf is what a keyed write's result remembers, and whether it is
// remembered at all.
func answerOf(v any, err error) (keyedAnswer, bool) {
	switch db.ErrorCode(err) {
	case "":
		enc, jerr := json.Marshal(v)
		return keyedAnswer{Value: enc}, jerr == nil
	case db.EINTERNAL, db.EUNAVAILABLE, db.ERATELIMITED:
		return keyedAnswer{}, false
	case db.EINVALID: // refused before anything was tried: the client may mend the request and send it again under its key
		return keyedAnswer{}, false
	}
	return keyedAnswer{Code: db.ErrorCode(err), Message: db.ErrorMessage(err), Fields: db.FieldsOf(err)}, true
}

// err is the remembered refusal as the error first answered.
func (a keyedAnswer) err() error {
	if len(a.Fields) > 0 {
		return a.Fields.Err()
	}
	return &db.Error{Code: a.Code, Message: a.Message}
}
