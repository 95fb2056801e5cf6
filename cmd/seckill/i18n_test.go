package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/seckill/seckill/db/demo"
	"github.com/seckill/seckill/views/i18n"
)

// i18nNames are words a Chinese page may show in Latin letters: the
// product's name, units and the standards it names. People's and goods'
// names come from the data (i18nDataWords).
var i18nNames = map[string]bool{
	"seckill": true, "UTC": true, "ID": true, "CSV": true, "API": true, "URL": true, "JSON": true,
	"HMAC": true, "SHA": true, "Asynqmon": true, "Prometheus": true, "WebSocket": true, "English": true,
	"SMS": true, "PoW": true, "https": true, "http": true,
}

// i18nPages are the pages the language test reads: the layout test's (every
// main page of the demo shop, as its user) and the pages of fair sales, the
// admin's own and the anonymous ones.
func i18nPages(t *testing.T, a *testApp) []layoutPage {
	pages := []layoutPage{{"", "/"}, {"", "/login"}, {"", "/register"}, {"", "/slots"}, {"", "/coupons"}, {"", "/redpackets"}}
	pages = append(pages, layoutPages(t, a)...)
	_, queued := a.queueGoods(10, 5, time.Hour, nil)
	_, raffled := a.raffleGoods(3, time.Hour)
	s := demo.Shopper
	pages = append(pages,
		layoutPage{s, fmt.Sprintf("/goods/%d", queued.ID)}, layoutPage{s, fmt.Sprintf("/goods/%d/queue", queued.ID)},
		layoutPage{s, fmt.Sprintf("/goods/%d", raffled.ID)}, layoutPage{s, fmt.Sprintf("/goods/%d/raffle", raffled.ID)},
		layoutPage{a.Config.AdminUsername, "/admin/switches"}, layoutPage{a.Config.AdminUsername, "/admin/audit"},
		layoutPage{a.Config.AdminUsername, fmt.Sprintf("/admin/goods/%d", queued.ID)},
		layoutPage{a.Config.AdminUsername, fmt.Sprintf("/admin/goods/%d", raffled.ID)},
	)
	return pages
}

// Every page reads in the language the browser asks for (Accept-Language)
// or the reader picked with the switch: a Chinese page shows no English
// word but names (of people, goods, the product), an English page no
// Chinese but the switch's own name. The picked language is kept on the
// account: signing in again elsewhere brings it back.
func TestPagesInBothLanguages(t *testing.T) {
	a := startApp(t, func(c *Config) { c.Demo = true })
	pages := i18nPages(t, a)
	names := i18nDataWords(t, a)
	tokens := map[string]string{}
	for user, pw := range layoutPasswords(a) {
		tokens[user] = a.login(user, pw)
	}
	var missing []string
	seen := map[string]bool{}
	for _, p := range pages {
		for _, l := range []i18n.Lang{i18n.En, i18n.Zh} {
			st, body := i18nGet(t, a, tokens[p.user], p.path, string(l)+",en;q=0.1")
			if st != 200 {
				t.Errorf("%s as %q in %s: %d", p.path, p.user, l, st)
				continue
			}
			if !strings.Contains(body, `<html lang="`+string(l)+`"`) {
				t.Errorf("%s in %s: <html lang> is not %s", p.path, l, l)
			}
			for _, text := range visibleTexts(body) {
				if l == i18n.En {
					// What a merchant typed is in their words (the demo's are
					// in both languages): only the page's own words count.
					if cjk.MatchString(withoutData(text, names)) && text != i18n.Zh.Name() {
						t.Errorf("%s in English shows Chinese: %q", p.path, text)
					}
					continue
				}
				for _, w := range englishWords(text, names) {
					if k := p.path + "\x00" + text; !seen[k] {
						seen[k] = true
						missing = append(missing, fmt.Sprintf("%s: %q (%s)", p.path, text, w))
					}
					break
				}
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%d texts on Chinese pages are in English (views/i18n/zh_*.go translates them):\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

// The switch: a shopper picks Chinese on one browser; another browser,
// asking for English, gets Chinese once they sign in.
func TestLanguageSwitchKeptPerAccount(t *testing.T) {
	a := startApp(t, func(c *Config) { c.Demo = true })
	one := a.cookieLogin(demo.Shopper, demo.ShopperPassword)
	if st, loc := one.postForm("/lang", url.Values{"lang": {"zh-CN"}, "back": {"/me/orders"}}); st != http.StatusSeeOther || loc != "/me/orders" {
		t.Fatalf("POST /lang: %d to %q, want 303 back to /me/orders", st, loc)
	}
	if _, body, _ := one.page("/me/orders"); !strings.Contains(body, `<html lang="zh-CN"`) {
		t.Fatal("after the switch the page is not Chinese")
	}
	two := a.cookieLogin(demo.Shopper, demo.ShopperPassword)
	if _, body, _ := two.page("/me/orders"); !strings.Contains(body, `<html lang="zh-CN"`) {
		t.Fatal("signing in on another browser does not bring back the account's language")
	}
	if st, _ := one.postForm("/lang", url.Values{"lang": {"klingon"}}); st != 400 {
		t.Fatalf("POST /lang with an unknown language: %d, want 400", st)
	}
	// The API keeps its codes; only the message is in the reader's language.
	var e apiError
	req, _ := http.NewRequest("POST", a.URL+"/api/goods/999999/grab", nil)
	req.Header.Set("Authorization", "Bearer "+a.login(demo.Shopper, demo.ShopperPassword))
	req.Header.Set("Accept-Language", "zh-CN")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	json.NewDecoder(res.Body).Decode(&e)
	if e.Error.Code != "not_found" || !cjk.MatchString(e.Error.Message) {
		t.Fatalf("a refusal in Chinese: %+v, want code not_found and a Chinese message", e)
	}
}

var cjk = regexp.MustCompile(`[\p{Han}]`)

// englishWords are the words of text in Latin letters that are not names.
func englishWords(text string, names map[string]bool) []string {
	var out []string
	for _, f := range strings.FieldsFunc(text, func(r rune) bool {
		return r == ' ' || r == '\n' || r == '\t' || r == '·' || r == '(' || r == ')' || r == ',' || r == ':' || r == '：' || r == '，' || r == '（' || r == '）' || r == '“' || r == '”' || r == '"' || r == '«' || r == '»' || r == '!' || r == '?' || r == ';' || r == '。'
	}) {
		f = strings.Trim(f, ".'’-–—/…")
		if strings.ContainsAny(f, "0123456789@/_#¥=&") || names[f] || names[strings.ToLower(f)] {
			continue
		}
		for _, w := range latinWord.FindAllString(f, -1) {
			if !names[w] && !names[strings.ToLower(w)] {
				out = append(out, w)
			}
		}
	}
	return out
}

var latinWord = regexp.MustCompile(`[A-Za-z]{2,}`)

// visibleTexts are the texts a reader sees on a page: text nodes outside
// scripts and styles, and the attributes shown as text (placeholders,
// titles, labels, button values, table-card labels).
func visibleTexts(page string) []string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return []string{"unparsable page: " + err.Error()}
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "style", "template", "code", "pre", "kbd", "samp":
				return
			}
			for _, at := range n.Attr {
				switch at.Key {
				case "placeholder", "title", "aria-label", "alt", "data-label", "data-confirm":
					out = append(out, strings.TrimSpace(at.Val))
				case "value":
					if n.Data == "input" && (attr(n, "type") == "submit" || attr(n, "type") == "button") {
						out = append(out, strings.TrimSpace(at.Val))
					}
				}
			}
			if attr(n, "translate") == "no" {
				return
			}
		}
		if n.Type == html.TextNode {
			if s := strings.TrimSpace(n.Data); s != "" {
				out = append(out, strings.Join(strings.Fields(s), " "))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// i18nDataWords are the words of the names the data holds: people, slots,
// goods, coupons and red packets, their descriptions too.
func i18nDataWords(t *testing.T, a *testApp) map[string]bool {
	words := map[string]bool{}
	for k := range i18nNames {
		words[k] = true
	}
	for _, q := range []string{`SELECT username FROM users`, `SELECT title FROM slots`, `SELECT title FROM goods`,
		`SELECT description FROM goods`, `SELECT title FROM coupons`, `SELECT title FROM redpackets`} {
		rows, err := a.SQL.R.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for rows.Next() {
			var s string
			rows.Scan(&s)
			for _, w := range latinWord.FindAllString(s, -1) {
				words[w], words[strings.ToLower(w)] = true, true
			}
			words[s] = true
		}
		rows.Close()
	}
	return words
}

// withoutData is text with every data string (names, titles,
// descriptions: i18nDataWords) that holds Chinese taken out.
func withoutData(text string, names map[string]bool) string {
	for s := range names {
		if cjk.MatchString(s) {
			text = strings.ReplaceAll(text, s, "")
		}
	}
	return text
}

// i18nGet reads a page as the token's user (anonymous for "") asking for
// a language.
func i18nGet(t *testing.T, a *testApp, token, path, acceptLanguage string) (int, string) {
	req, _ := http.NewRequest("GET", a.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept-Language", acceptLanguage)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
