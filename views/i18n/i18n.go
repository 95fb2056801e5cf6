// Package i18n puts the shop's words in the reader's language: English, in
// which the code is written, and Simplified Chinese.
//
// A message is looked up by its English text, so the code reads as the page
// does and an untranslated message shows in English (the pages' test finds
// it). A message built with fmt (a flash, an error from a service) is found
// through its format: "Order %s refunded." is registered once and
// "Order #G1-0001 refunded." is matched to it, its arguments carried into the
// translation. The catalog is zh_*.go, one file per part of the shop; the
// browser's scripts get the entries registered with addJS (JSCatalog).
package i18n

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Lang is a language the shop is written in, as an IETF tag.
type Lang string

// The shop's languages.
const (
	En Lang = "en"
	Zh Lang = "zh-CN"
)

// Langs are the shop's languages, in the order the switch offers them.
var Langs = []Lang{Zh, En}

// Name is the language's name in itself, as the switch shows it.
func (l Lang) Name() string {
	if l == Zh {
		return "中文"
	}
	return "English"
}

// Parse reads a language tag: any Chinese (zh, zh-CN, zh-Hans, zh-TW) is
// Simplified Chinese, any English is English; anything else is not ok.
func Parse(tag string) (Lang, bool) {
	tag = strings.ToLower(strings.TrimSpace(tag))
	switch {
	case tag == "zh" || strings.HasPrefix(tag, "zh-") || strings.HasPrefix(tag, "zh_"):
		return Zh, true
	case tag == "en" || strings.HasPrefix(tag, "en-") || strings.HasPrefix(tag, "en_"):
		return En, true
	}
	return En, false
}

// FromAcceptLanguage is the shop language a browser's Accept-Language
// prefers most (by q, then by order); English when it names none of them.
func FromAcceptLanguage(header string) Lang {
	best, bestQ := En, 0.0
	for _, part := range strings.Split(header, ",") {
		tag, q := part, 1.0
		if i := strings.Index(part, ";"); i >= 0 {
			tag = part[:i]
			var v float64
			if _, err := fmt.Sscanf(strings.TrimSpace(part[i+1:]), "q=%g", &v); err == nil {
				q = v
			}
		}
		if l, ok := Parse(tag); ok && q > bestQ {
			best, bestQ = l, q
		}
	}
	return best
}

type langKey struct{}

// With returns ctx carrying the reader's language.
func With(ctx context.Context, l Lang) context.Context { return context.WithValue(ctx, langKey{}, l) }

// WithLazy returns ctx carrying the reader's language as found by find,
// called at most once and only when something asks (an answer with no
// words never pays for the look-up).
func WithLazy(ctx context.Context, find func() Lang) context.Context {
	return &lazyLang{Context: ctx, find: find}
}

// lazyLang is a context carrying a language yet to be found: one value, so
// one allocation a request (every signed-in one makes it).
type lazyLang struct {
	context.Context
	once sync.Once
	find func() Lang
	l    Lang
}

func (l *lazyLang) Value(key any) any {
	if key == (langKey{}) {
		return l
	}
	return l.Context.Value(key)
}

// Of is the language ctx carries: English when none.
func Of(ctx context.Context) Lang {
	switch l := ctx.Value(langKey{}).(type) {
	case Lang:
		return l
	case *lazyLang:
		l.once.Do(func() { l.l = l.find() })
		return l.l
	}
	return En
}

// Given is the language ctx carries outright, without finding one it
// carries to be found (WithLazy): for what must not start a look-up.
func Given(ctx context.Context) (Lang, bool) {
	l, ok := ctx.Value(langKey{}).(Lang)
	return l, ok
}

// T is msg in ctx's language.
func T(ctx context.Context, msg string) string { return Of(ctx).T(msg) }

// F is fmt.Sprintf of format, translated, in ctx's language.
func F(ctx context.Context, format string, args ...any) string { return Of(ctx).F(format, args...) }

// T is msg in l: its translation, or the translation of the format it was
// made from with its arguments carried over, or msg itself.
func (l Lang) T(msg string) string {
	if l != Zh || msg == "" {
		return msg
	}
	if s, ok := zh.exact[msg]; ok {
		return s
	}
	return zh.match(msg)
}

// F is fmt.Sprintf of format's translation in l.
func (l Lang) F(format string, args ...any) string {
	if l == Zh {
		if s, ok := zh.exact[format]; ok {
			format = s
		}
	}
	return fmt.Sprintf(format, args...)
}

// catalog is one language's translations.
type catalog struct {
	mu       sync.Mutex
	exact    map[string]string // English message or format → translation
	js       map[string]string // what the browser's scripts get
	fns      map[string]func([]string) string
	patterns []pattern // the formats with verbs, longest first
	sorted   bool
}

// pattern matches messages made from one format.
type pattern struct {
	re   *regexp.Regexp
	to   string                     // the translated format
	fn   func(args []string) string // or the translation made from the matched texts (addFunc)
	lits int                        // letters outside the verbs: the more, the more specific
}

var zh = &catalog{exact: map[string]string{}, js: map[string]string{}, fns: map[string]func([]string) string{}}

// verb is a fmt verb the patterns understand; %% is a literal percent.
var verb = regexp.MustCompile(`%(\[\d+\])?[-+# 0]*\d*(\.\d+)?[sdvqgf%]`)

// add registers English → Chinese translations (called from zh_*.go's init).
// A message registered twice with two translations panics at start.
func add(m map[string]string) {
	zh.mu.Lock()
	defer zh.mu.Unlock()
	for en, to := range m {
		if old, ok := zh.exact[en]; ok && old != to {
			panic(fmt.Sprintf("i18n: %q translated twice: %q and %q", en, old, to))
		}
		zh.exact[en] = to
		if !strings.Contains(en, "%") {
			continue
		}
		var re strings.Builder
		re.WriteString("^")
		last, lits := 0, 0
		for _, loc := range verb.FindAllStringIndex(en, -1) {
			lit := en[last:loc[0]]
			lits += len(lit)
			re.WriteString(regexp.QuoteMeta(lit))
			if en[loc[0]:loc[1]] == "%%" {
				re.WriteString("%")
			} else {
				re.WriteString("(.+?)")
			}
			last = loc[1]
		}
		lits += len(en[last:])
		re.WriteString(regexp.QuoteMeta(en[last:]) + "$")
		if lits < 3 { // "%dd": too little around its verbs to tell its messages; F only
			continue
		}
		zh.patterns = append(zh.patterns, pattern{re: regexp.MustCompile(re.String()), to: to, fn: zh.fns[en], lits: lits})
		zh.sorted = false
	}
}

// addFunc registers formats whose translation is worked out from the
// texts their verbs matched, where Chinese says a thing another way than
// English (15% off is 8.5折); the format's own translation (what F uses) is
// fn of its verbs.
func addFunc(m map[string]func(args []string) string) {
	for en, fn := range m {
		zh.mu.Lock()
		zh.fns[en] = fn
		zh.mu.Unlock()
		var args []string // the format's own verbs, by index, for F
		for _, v := range verb.FindAllString(en, -1) {
			if v != "%%" {
				args = append(args, fmt.Sprintf("%%[%d]%c", len(args)+1, v[len(v)-1]))
			}
		}
		add(map[string]string{en: fn(args)})
	}
}

// addJS registers translations the browser's scripts use too.
func addJS(m map[string]string) {
	add(m)
	zh.mu.Lock()
	defer zh.mu.Unlock()
	for en, to := range m {
		zh.js[en] = to
	}
}

// match translates msg through the first (most specific) format it fits:
// each %s-like verb of the translation takes the text the English one
// matched, in order (or by index, %[2]s).
func (c *catalog) match(msg string) string {
	c.mu.Lock()
	if !c.sorted {
		sort.SliceStable(c.patterns, func(i, j int) bool { return c.patterns[i].lits > c.patterns[j].lits })
		c.sorted = true
	}
	ps := c.patterns
	c.mu.Unlock()
	for _, p := range ps {
		m := p.re.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		if p.fn != nil {
			return p.fn(m[1:])
		}
		args := make([]any, len(m)-1)
		for i, s := range m[1:] {
			args[i] = raw(s)
		}
		return fmt.Sprintf(p.to, args...)
	}
	return msg
}

// raw is matched text carried into a translation: it prints as itself under
// any verb (%s, %d, %v), so "%d" in a translation takes "12" as it was.
type raw string

func (r raw) Format(f fmt.State, _ rune) { f.Write([]byte(r)) }

// JSCatalog is the JSON object of the translations the browser's scripts
// use in l (nil for English, whose scripts speak it already).
func JSCatalog(l Lang) []byte {
	if l != Zh {
		return nil
	}
	zh.mu.Lock()
	defer zh.mu.Unlock()
	out := make(map[string]string, len(zh.js)+len(LiveTexts))
	for en, to := range zh.js {
		out[en] = to
	}
	for _, f := range LiveTexts {
		if to, ok := zh.exact[f]; ok {
			out[f] = to
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// LiveTexts are what the scripts show of a notice as it arrives over the
// live socket: the formats of the stored messages, sent to the browser with
// the scripts' catalog so its T matches a finished message against them as
// Lang.T does (static/app.js), and the link beside a notice.
var LiveTexts = []string{
	"See the goods",
	"“%s” goes on sale in %d minutes, at %s.",
	"“%s” opens for grabs in %d minutes, at %s.",
	"Order #%s could not be kept: a server failed before it was saved for good. Nothing was charged.",
	"Order #%s could not be kept: a server failed and its item had gone to another order. Your payment of ¥%d.%02d will be refunded.",
	"Your grab of “%s” at %s did not go through: the coupon had already gone to someone else. It is not in your coupons.",
	"Your grab of “%s” at %s did not go through: you already hold the %d allowed per person. It is not in your coupons.",
	"You won the raffle for “%s”: order #%s is yours. Pay it by %s UTC, or it passes to the next entry.",
	"A unit passed on to you in the raffle for “%s”: order #%s is yours. Pay it by %s UTC, or it passes to the next entry.",
}

// Has reports whether msg, as the code writes it (a message or a format),
// has a translation into l; English has them all.
func Has(l Lang, msg string) bool {
	if l != Zh {
		return true
	}
	zh.mu.Lock()
	defer zh.mu.Unlock()
	_, ok := zh.exact[msg]
	return ok
}
