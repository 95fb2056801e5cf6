package views

import (
	"context"
	"encoding/json"

	"github.com/seckill/seckill/views/i18n"
)

// T is msg in the reader's language (ctx's): every word a page shows goes
// through it or F.
func T(ctx context.Context, msg string) string { return i18n.T(ctx, msg) }

// F is fmt.Sprintf of format translated into the reader's language.
func F(ctx context.Context, format string, args ...any) string { return i18n.F(ctx, format, args...) }

// lang is the reader's language tag, for <html lang> and the scripts.
func lang(ctx context.Context) string { return string(i18n.Of(ctx)) }

// otherLangs are the languages the switch offers besides the reader's.
func otherLangs(ctx context.Context) []i18n.Lang {
	var out []i18n.Lang
	for _, l := range i18n.Langs {
		if l != i18n.Of(ctx) {
			out = append(out, l)
		}
	}
	return out
}

// jsCatalog is the JSON of the translations the scripts use (nil in English).
func jsCatalog(ctx context.Context) json.RawMessage { return i18n.JSCatalog(i18n.Of(ctx)) }
