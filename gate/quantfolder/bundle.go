package quantfolder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"phase0/gate/quant"
	"phase0/read/safetensors"
)

// checkBundle reads the header of every safetensors file of the bundle
// snapshot dir against the file's size, as gate 1 reads a bf16
// checkpoint's: what does not fit, and the dtype each readable header
// gives each tensor.
func checkBundle(id, dir string) ([]string, map[string]string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []string{fmt.Sprintf("bundle %s: %v", id, err)}, nil
	}
	var problems []string
	dtypes := map[string]string{}
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".q4nx") || strings.HasSuffix(name, ".safetensors") {
			h, err := checkHeader(filepath.Join(dir, name), name)
			if err != nil {
				problems = append(problems, fmt.Sprintf("bundle %s: %s", id, describeHeaderError(err)))
				continue
			}
			for _, t := range h.Tensors {
				dtypes[t.Name] = t.DType
			}
		}
	}
	return problems, dtypes
}

func checkHeader(path, name string) (*safetensors.Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// A bundle's header marks its projections I8 (safetensors' own) or,
	// in the older codec the folder's loader still reads, Q4NX.
	return safetensors.ReadHeaderWith(f, fi.Size(), name, bundleDTypes)
}

// bundleDTypes are the dtypes a bundle holds beyond safetensors' own.
var bundleDTypes = safetensors.ExtraDTypes{"Q4NX": quant.Q4NXBytes}

// describeHeaderError is err, or for data bytes no tensor of the header
// covers, those bytes named by the tensors around them and, when a tensor
// of one layer is absent from the header while other layers list it, the
// tensor they likely are (docs/quantized.md).
func describeHeaderError(err error) string {
	var fe *safetensors.FormatError
	if !errors.As(err, &fe) || fe.Gap == nil {
		return err.Error()
	}
	g := fe.Gap
	where := fmt.Sprintf("before tensor %q", g.Before)
	if g.After != "" {
		where = fmt.Sprintf("between tensor %q and tensor %q", g.After, g.Before)
	}
	msg := fmt.Sprintf("%s: %d unlisted bytes at data offsets [%d, %d) %s: no tensor of the header covers them", fe.File, g.End-g.Begin, g.Begin, g.End, where)
	if name, sibling, ok := likelyAbsent(g); ok {
		return msg + fmt.Sprintf("; likely the bytes of %q, which the header does not list (%q, the same tensor of another layer, is %d bytes)", name, sibling.Name, sibling.Bytes())
	}
	return msg + "; the header lacks the tensor they belong to, or the file holds bytes no tensor uses"
}

// layerName splits model.layers.<k>.<rest> (any prefix) into prefix, k and rest.
var layerName = regexp.MustCompile(`^(.*\blayers\.)(\d+)(\..+)$`)

// likelyAbsent is the tensor whose bytes the gap most likely holds: one of
// a layer the header lists other layers' copies of but not this layer's,
// whose size in another layer is the gap's; of several, the one of the
// layer of the tensors around the gap, else the first by name.
func likelyAbsent(g *safetensors.Gap) (string, safetensors.Tensor, bool) {
	have := map[string]bool{}
	var layers []string // prefix + k of every layer the header lists
	for _, t := range g.Tensors {
		have[t.Name] = true
		if m := layerName.FindStringSubmatch(t.Name); m != nil && !slices.Contains(layers, m[1]+m[2]) {
			layers = append(layers, m[1]+m[2])
		}
	}
	slices.Sort(layers)
	layerOf := func(name string) string {
		if m := layerName.FindStringSubmatch(name); m != nil {
			return m[1] + m[2]
		}
		return ""
	}
	near := func(name string) bool {
		l := layerOf(name)
		return l != "" && (l == layerOf(g.After) || l == layerOf(g.Before))
	}
	var found string
	var sibling safetensors.Tensor
	for _, t := range g.Tensors {
		m := layerName.FindStringSubmatch(t.Name)
		if m == nil || t.Bytes() != g.End-g.Begin {
			continue
		}
		for _, l := range layers {
			name := l + m[3]
			if !strings.HasPrefix(l, m[1]) || have[name] {
				continue
			}
			if found == "" || near(name) && !near(found) || near(name) == near(found) && name < found {
				found, sibling = name, t
			}
		}
	}
	return found, sibling, found != ""
}
