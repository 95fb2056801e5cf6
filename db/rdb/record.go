package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Record is a record the scripts keep in Redis as one string (an order, a
// claim...): its fields joined by Sep, in the order of Fields. The one
// field list gives both sides their names for the places: Lua a constant
// per field (Lua), Go a codec over a struct T (Decode, Encode), so neither
// names a field by its number, and a record one side writes with a field
// the other does not know is refused by both.
//
// A record holds a prefix of the fields: it may end after a field marked
// Last (and after the last field).
type Record[T any] struct {
	name   string // Lua: NAME_FIELDS, NAME_ENDS, nameRecord, nameFields
	prefix string // Lua: the constants are prefix + the field's name in capitals
	sep    string
	fields []Field[T]
	ends   []bool // ends[n]: a record may have n fields

	echoOnce sync.Once
	echo     *redis.Script
}

// Field is one field of a Record over T: a number (Int) or a text (Text),
// each the field's place in a T.
type Field[T any] struct {
	Name string
	Int  func(*T) *int64
	Text func(*T) *string
	Last bool // a record may end after it
}

// NewRecord lists a record's fields. name names its Lua helpers, prefix
// its Lua constants; sep joins the fields (one character; texts must not
// hold it).
func NewRecord[T any](name, prefix, sep string, fields ...Field[T]) *Record[T] {
	r := &Record[T]{name: name, prefix: prefix, sep: sep, fields: fields, ends: make([]bool, len(fields)+1)}
	for i, f := range fields {
		if (f.Int == nil) == (f.Text == nil) {
			panic(fmt.Sprintf("record %s: field %s must be a number or a text", name, f.Name))
		}
		r.ends[i+1] = f.Last || i == len(fields)-1
	}
	return r
}

// Names are the fields' names, in order.
func (r *Record[T]) Names() []string {
	names := make([]string, len(r.fields))
	for i, f := range r.fields {
		names[i] = f.Name
	}
	return names
}

// LuaName is the Lua constant of the field's place.
func (r *Record[T]) LuaName(field string) string { return r.prefix + strings.ToUpper(field) }

// Decode reads a record.
func (r *Record[T]) Decode(rec string) (T, error) {
	var v T
	n := strings.Count(rec, r.sep) + 1
	if n >= len(r.ends) || !r.ends[n] {
		return v, fmt.Errorf("%s record %q: %d fields, which no %s record has", r.name, rec, n, r.name)
	}
	rest := rec
	for i, f := range r.fields[:n] {
		var s string
		s, rest, _ = strings.Cut(rest, r.sep)
		if f.Text != nil {
			*f.Text(&v) = s
			continue
		}
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return v, fmt.Errorf("%s record %q: field %d (%s): %w", r.name, rec, i+1, f.Name, err)
		}
		*f.Int(&v) = x
	}
	return v, nil
}

// Encode writes the record: its fields up to the shortest end that holds
// every field that is not zero.
func (r *Record[T]) Encode(v *T) string {
	n := 0
	for i, f := range r.fields {
		if f.Text != nil && *f.Text(v) != "" || f.Int != nil && *f.Int(v) != 0 {
			n = i + 1
		}
	}
	for !r.ends[n] {
		n++
	}
	b := make([]byte, 0, 16*n)
	for i, f := range r.fields[:n] {
		if i > 0 {
			b = append(b, r.sep...)
		}
		if f.Text != nil {
			b = append(b, *f.Text(v)...)
		} else {
			b = strconv.AppendInt(b, *f.Int(v), 10)
		}
	}
	return string(b)
}

// Values are every field of v as text, in order (what a full record holds).
func (r *Record[T]) Values(v *T) []string {
	out := make([]string, len(r.fields))
	for i, f := range r.fields {
		if f.Text != nil {
			out[i] = *f.Text(v)
		} else {
			out[i] = strconv.FormatInt(*f.Int(v), 10)
		}
	}
	return out
}

// Lua is the record's Lua prelude: a constant per field's place (the
// prefix and its name in capitals: F_SEQ = 1, ...), NAME_FIELDS, the
// names in order, NAME_ENDS, the field counts a record may have, and two
// functions: nameRecord(f) joins the fields f[F_SEQ], f[F_USER], ... into
// the record, refusing one that may not end where it does (a field written
// on one side only), and nameFields(rec) splits a record into its fields.
func (r *Record[T]) Lua() string {
	var names, places, quoted, ends []string
	for i, f := range r.fields {
		names = append(names, r.LuaName(f.Name))
		places = append(places, strconv.Itoa(i+1))
		quoted = append(quoted, "'"+f.Name+"'")
		if r.ends[i+1] {
			ends = append(ends, "["+strconv.Itoa(i+1)+"] = true")
		}
	}
	up := strings.ToUpper(r.name)
	return `
-- The places of a ` + r.name + ` record's fields (generated from its rdb.Record).
local ` + strings.Join(names, ", ") + ` = ` + strings.Join(places, ", ") + `
local ` + up + `_FIELDS = {` + strings.Join(quoted, ", ") + `}
local ` + up + `_ENDS = {` + strings.Join(ends, ", ") + `}

local function ` + r.name + `Record(f)
	if not ` + up + `_ENDS[#f] then
		return error('` + r.name + ` record of ' .. #f .. ' fields: a record may not end there')
	end
	return table.concat(f, '` + r.sep + `')
end

local function ` + r.name + `Fields(rec)
	local f = {}
	for v in string.gmatch(rec .. '` + r.sep + `', '([^%` + r.sep + `]*)%` + r.sep + `') do f[#f + 1] = v end
	return f
end
`
}

// Echo runs the record's Lua prelude on rec in Redis, for the round-trip
// tests: it answers the field names Lua knows, what Lua reads from rec by
// each name ("<none>" past the record's end) and the record Lua joins
// from those fields again (an error when it may not end there).
func (r *Record[T]) Echo(ctx context.Context, c redis.Scripter, rec string) (names []string, fields map[string]string, again string, err error) {
	r.echoOnce.Do(func() {
		up := strings.ToUpper(r.name)
		r.echo = redis.NewScript(r.Lua() + `
local f = ` + r.name + `Fields(ARGV[1])
local out = {}
for _, name in ipairs(` + up + `_FIELDS) do out[#out + 1] = name end
for i = 1, #` + up + `_FIELDS do out[#out + 1] = f[i] or '<none>' end
out[#out + 1] = ` + r.name + `Record(f)
return out
`)
	})
	res, err := r.echo.Run(ctx, c, []string{"record-echo"}, rec).StringSlice()
	if err != nil {
		return nil, nil, "", err
	}
	n := (len(res) - 1) / 2
	if len(res) != 2*n+1 {
		return nil, nil, "", fmt.Errorf("%s record echo answered %q", r.name, res)
	}
	fields = map[string]string{}
	for i, name := range res[:n] {
		fields[name] = res[n+i]
	}
	return res[:n], fields, res[2*n], nil
}
