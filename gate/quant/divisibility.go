package quant

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"phase0/read/model"
)

// Constants that must fit together (docs/quantized.md): a slice or tile
// constant the folder's own code divides a dimension by (N = INTER //
// FFN_TILE, D % TILE_N) must divide it, or the slices leave a remainder
// of the dimension uncomputed (a tile width copied from another model's
// header zeroes the rest of the FFN with no error). The code is read as
// text: every `DIM // TILE` and `DIM % TILE` where DIM stands for a
// dimension of config.json (a constant name of constantFields, or a config
// attribute such as config.hidden_dim) and TILE is a numeric constant the
// folder's files hard-code.

// Division is one place a folder's code divides a dimension by a constant.
type Division struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Expr string `json:"expr"` // "INTER // FFN_TILE"
	Dim  string `json:"dim"`  // INTER, config.hidden_dim
	Tile string `json:"tile"` // FFN_TILE
}

// DivisionCheck is a Division judged: the dimension's config.json value,
// the constant's value and what the division leaves.
type DivisionCheck struct {
	Division
	Field     string  `json:"field"` // the dimension's config meaning (hidden_dim)
	DimValue  float64 `json:"dim_value"`
	TileValue float64 `json:"tile_value"`
	// TileFile is the file that hard-codes the constant, when not File.
	TileFile  string  `json:"tile_file,omitempty"`
	Remainder float64 `json:"remainder"`
}

// maxDivisions bounds the divisions read from one file.
const maxDivisions = 256

// division is `DIM // TILE` or `DIM % TILE`: DIM an upper-case name or a
// config attribute (config.hidden_dim, cfg.emb_dim, self.config.n_heads),
// TILE an upper-case name.
var division = regexp.MustCompile(`(?:^|[^\w.])((?:self\.)?(?:config|cfg)\.[a-z_]+|[A-Z_][A-Z0-9_]*)\s*(//|%)\s*([A-Z_][A-Z0-9_]*)\b`)

// Divisions reads the divisions of a dimension by a constant in src
// (file's text), in order; comments are skipped. A dimension is a name
// that stands for a config value (D, INTER, DQ …, config.hidden_dim).
func Divisions(file string, src []byte) []Division {
	var out []Division
	for i, line := range bytes.Split(src, []byte("\n")) {
		if j := bytes.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		for _, m := range division.FindAllSubmatch(line, -1) {
			if len(out) >= maxDivisions {
				return out
			}
			dim, op, tile := string(m[1]), string(m[2]), string(m[3])
			if _, ok := dimField(dim); !ok || dim == tile {
				continue
			}
			out = append(out, Division{File: file, Line: i + 1, Expr: dim + " " + op + " " + tile, Dim: dim, Tile: tile})
		}
	}
	return out
}

// dimField is the config meaning of a divided name: a constant of
// constantFields that is an integer dimension, or a config attribute of
// configFunctionFields.
func dimField(dim string) (struct {
	field string
	of    func(*model.Config) float64
}, bool) {
	if _, attr, ok := strings.Cut(dim, "."); ok {
		attr = attr[strings.LastIndexByte(attr, '.')+1:]
		if of, known := configFunctionFields[attr]; known && attr != "rope_base" && attr != "rms_norm_eps" {
			return struct {
				field string
				of    func(*model.Config) float64
			}{attr, of}, true
		}
		return struct {
			field string
			of    func(*model.Config) float64
		}{}, false
	}
	f, ok := constantFields[dim]
	if !ok || dim == "ROPE_THETA" || dim == "RMS_EPS" || dim == "ATTN_SCALE" {
		return f, false
	}
	return f, true
}

// numericLine is a top-level NAME = <integer> assignment, with an optional
// comment.
var numericLine = regexp.MustCompile(`(?m)^([A-Z_][A-Z0-9_]*)\s*=\s*([0-9][0-9_]*)\s*(?:#[^\n]*)?$`)

// IntConstants are the integer constants src hard-codes at top level
// (TILE_N = 256, FFN_SLICE = 1536), the first assignment of each.
func IntConstants(src []byte) map[string]float64 {
	out := map[string]float64{}
	for _, m := range numericLine.FindAllSubmatch(src, -1) {
		name := string(m[1])
		if _, seen := out[name]; seen {
			continue
		}
		if v, err := strconv.ParseFloat(strings.ReplaceAll(string(m[2]), "_", ""), 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// Tiles are the integer constants a folder's files hard-code: byFile[file]
// each file's own, order the files to look a constant up in when the file
// that divides does not define it (the module, then its verify_adapter.py).
type Tiles struct {
	ByFile map[string]map[string]float64
	Order  []string
}

// lookup is the value of name for a division in file, and the file that
// hard-codes it.
func (t Tiles) lookup(file, name string) (float64, string, bool) {
	if v, ok := t.ByFile[file][name]; ok {
		return v, file, true
	}
	for _, f := range t.Order {
		if v, ok := t.ByFile[f][name]; ok {
			return v, f, true
		}
	}
	return 0, "", false
}

// JudgeDivisions adds to quantized gate 3 each division of a dimension by
// a constant the folder hard-codes: the dimension is config.json's (ref),
// and a constant that does not divide it FAILs, naming the file and line,
// the constant, the dimension and the remainder. A division by a name no
// file of the folder hard-codes (imported, computed) is not judged.
func (c *Constants) JudgeDivisions(divs []Division, tiles Tiles, ref *model.Config) {
	if ref == nil {
		return
	}
	for _, d := range divs {
		tv, tfile, ok := tiles.lookup(d.File, d.Tile)
		if !ok || tv <= 0 || tv != math.Trunc(tv) {
			continue
		}
		f, _ := dimField(d.Dim)
		dv := f.of(ref)
		if dv <= 0 || dv != math.Trunc(dv) {
			continue
		}
		rem := math.Mod(dv, tv)
		chk := DivisionCheck{Division: d, Field: f.field, DimValue: dv, TileValue: tv, Remainder: rem}
		if tfile != d.File {
			chk.TileFile = tfile
		}
		if slices.ContainsFunc(c.Divisions, func(have DivisionCheck) bool { return have.Division == d }) {
			continue
		}
		c.Divisions = append(c.Divisions, chk)
		if rem != 0 {
			from := ""
			if chk.TileFile != "" {
				from = " (hard-coded in " + chk.TileFile + ")"
			}
			c.FailWith("%s:%d: %s: %s = %g, which %s = %g%s does not divide: remainder %g (%g whole slices cover %g of %g; the rest is never computed)",
				d.File, d.Line, d.Expr, describeDim(d.Dim, f.field), dv, d.Tile, tv, from, rem, math.Floor(dv/tv), math.Floor(dv/tv)*tv, dv)
		}
	}
	if len(c.Divisions) > 0 {
		c.Summary += fmt.Sprintf("; %d division(s) of a dimension by a tile constant judged", len(c.Divisions))
	}
}

// describeDim says what a divided name stands for: "INTER (config.json's
// hidden_dim)".
func describeDim(dim, field string) string { return dim + " (config.json's " + field + ")" }
