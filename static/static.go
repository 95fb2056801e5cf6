// Package static holds the CSS, JavaScript and images served at /static,
// embedded in the binary so pages work with no internet.
//
// Pages name each file by URL, which puts a hash of the file's bytes in its
// name (app.css is /static/app.1a2b3c4d5e.css): a browser or proxy may keep
// it for a year, and a new build's file has a new name. The plain name
// still answers, with a short lifetime, for what names a file by hand.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
	"strings"
)

// Files are the embedded assets.
//
//go:embed *.css *.js *.svg *.ico
var Files embed.FS

// Asset is one embedded file as it is served.
type Asset struct {
	Name   string // as embedded: app.css
	Hashed string // with its content's hash: app.1a2b3c4d5e.css
	Type   string // its Content-Type
	Data   []byte
}

var (
	byName   = map[string]*Asset{}
	byHashed = map[string]*Asset{}
)

func init() {
	entries, err := fs.ReadDir(Files, ".")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		data, err := Files.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(data)
		ext := path.Ext(e.Name())
		a := &Asset{Name: e.Name(), Hashed: strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:5]) + ext, Data: data,
			Type: mime.TypeByExtension(ext)}
		if a.Type == "" {
			a.Type = "application/octet-stream"
		}
		if strings.HasPrefix(a.Type, "text/") && !strings.Contains(a.Type, "charset") {
			a.Type += "; charset=utf-8"
		}
		byName[a.Name], byHashed[a.Hashed] = a, a
	}
}

// URL is where pages find the named file: its content-hashed name under
// /static/. A name that is not embedded keeps its plain path (and answers 404).
func URL(name string) string {
	if a, ok := byName[name]; ok {
		return "/static/" + a.Hashed
	}
	return "/static/" + name
}

// Lookup finds a file by the name it was asked for; immutable is true for a
// content-hashed name, whose bytes never change.
func Lookup(name string) (a *Asset, immutable bool, ok bool) {
	if a, ok := byHashed[name]; ok {
		return a, true, true
	}
	a, ok = byName[name]
	return a, false, ok
}
