package quantkey

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/gate/quantfolder"
	"phase0/internal/testenv"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/read/fingerprint"
	"phase0/run/chain"
	"phase0/run/orchestrator"
	"phase0/run/reuse"
	"phase0/wire"
)

// quantProbe runs a quantized key's chain on s up to and including the
// stage named through, then probe on the key's state, in the chain (its
// lock held, its worker live), and returns the report.
func quantProbe(t *testing.T, s *orchestrator.Settings, arg, through string, probe func(context.Context, *keyState)) *report.Report {
	t.Helper()
	uses, err := quantfolder.Uses(s.LLMSDir, scaffold.ReservedNames, s.Name, arg)
	if err != nil || len(uses) != 1 {
		t.Fatalf("quantized uses of %s: %v, %v", arg, uses, err)
	}
	i := slices.IndexFunc(quantStages, func(sg chain.Stage[*keyState]) bool { return sg.Name() == through })
	if i < 0 {
		t.Fatalf("no stage %s", through)
	}
	probed := false
	stages := append(slices.Clip(quantStages[:i+1]), chain.Check("probe", func(ctx context.Context, k *keyState) (chain.Outcome, error) {
		probe(ctx, k)
		probed = true
		return chain.Outcome{}, nil
	}))
	r := runKey(context.Background(), s, &uses[0], "test", stages)
	if !probed {
		b, _ := r.JSON()
		t.Fatalf("the chain stopped before %s:\n%s", through, b)
	}
	return r
}

// TestQuantizedKeyStampsEveryInput: what a quantized key's verdict depends
// on is stamped, and a change to any one of it is named as the reason not
// to reuse (reuse.Decide compares exactly these): the bundle's blob by
// content (rewritten in place with its size and times kept, or its link
// moved to another blob), the card, the folder's modules, the key's
// MODEL_CHOICES line, Q4NX_MODEL_SOURCE, the reference's own record, the
// Python environment, and every module the folder's code imports from the
// tree (fused_decode, a borrowed bf16 folder's weights module).
func TestQuantizedKeyStampsEveryInput(t *testing.T) {
	t.Parallel()
	s, _ := quantCleanTree(t)
	s.Name = q4nxFolder
	llms := s.LLMSDir
	module := filepath.Join(llms, q4nxFolder, "llama32_1b_q4nx_weights.py")
	borrowed := filepath.Join(llms, "llama32_1b", "llama32_1b_weights.py")
	// The module borrows from the bf16 folder, as upstream's q4nx modules do.
	testenv.WriteFile(t, module, mustReadString(t, module)+`
_BF16 = str(Path(__file__).resolve().parents[1] / "llama32_1b")
if _BF16 not in sys.path:
    sys.path.insert(0, _BF16)
import llama32_1b_weights as _borrowed  # noqa: E402,F401
`)
	// What quant_reuse stamps, and its outcome (the key's reuse decision).
	stamp := func(t *testing.T) (stamp *reuse.Inputs, detail string) {
		t.Helper()
		quantProbe(t, s, llamaInstr, "quant_folder", func(_ context.Context, k *keyState) {
			rec, why, st := reusable(k)
			_, out, _ := orchestrator.ReuseOutcome(st, rec, why)
			stamp, detail = st, string(out.Status)+": "+out.Detail
		})
		return stamp, detail
	}
	snap := filepath.Join(s.Getenv("HF_HUB_CACHE"), "models--FastFlowLM--Llama-3.2-1B-NPU2", "snapshots", testenv.HubCommit(bundleID))
	blobOf := func(name string) string {
		target, err := filepath.EvalSymlinks(filepath.Join(snap, name))
		if err != nil {
			t.Fatal(err)
		}
		return target
	}
	edit := func(path, old, new string) {
		t.Helper()
		text := mustReadString(t, path)
		if !strings.Contains(text, old) {
			t.Fatalf("%s has no %q", path, old)
		}
		testenv.WriteFile(t, path, strings.Replace(text, old, new, 1))
	}

	prev, detail := stamp(t)
	if prev == nil || prev.Quant == nil || !strings.HasPrefix(detail, "SKIPPED: no recorded verdict") {
		t.Fatalf("quant_reuse stamped no quantized inputs: %s", detail)
	}
	for _, c := range []struct {
		input, want string
		change      func(t *testing.T)
	}{
		{"the bundle's blob rewritten in place, size and times kept", "bundle file model.q4nx", func(t *testing.T) {
			blob := blobOf("model.q4nx")
			fi, _ := os.Stat(blob)
			b := []byte(mustReadString(t, blob))
			b[len(b)-1] ^= 1
			if err := os.WriteFile(blob, b, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(blob, fi.ModTime(), fi.ModTime())
		}},
		{"the bundle's link moved to another blob", "bundle file model.q4nx", func(t *testing.T) {
			blob := blobOf("model.q4nx")
			other := filepath.Join(filepath.Dir(blob), strings.Repeat("e", 64))
			if err := os.Link(blob, other); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(snap, "model.q4nx")
			os.Remove(link)
			if err := os.Symlink(filepath.Join("..", "..", "blobs", filepath.Base(other)), link); err != nil {
				t.Fatal(err)
			}
		}},
		{"the card", "bundle file README.md", func(t *testing.T) {
			card := blobOf("README.md")
			testenv.WriteFile(t, card, mustReadString(t, card)+"\nA note.\n")
		}},
		{"the folder's module", "llama32_1b_q4nx_weights.py", func(t *testing.T) {
			edit(module, "RMS_EPS = 1e-5", "RMS_EPS = 1e-6")
		}},
		{"the key's MODEL_CHOICES line", "verify_adapter.py", func(t *testing.T) {
			edit(filepath.Join(llms, q4nxFolder, "verify_adapter.py"), `"base": "meta-llama/Llama-3.2-1B",`, `"base": "meta-llama/Llama-3.2-1B", "other": "meta-llama/Llama-3.2-1B",`)
		}},
		{"Q4NX_MODEL_SOURCE", "environment variable", func(t *testing.T) {
			env := s.Env
			s.Env = func(k string) string {
				if k == "Q4NX_MODEL_SOURCE" {
					return snap // the same bundle, named by the variable: judged, and stamped
				}
				return env(k)
			}
		}},
		{"the reference's own record", "reference record file report.json", func(t *testing.T) {
			bf16 := *s
			bf16.Name = ""
			ws, err := bf16.Places().Workspace(llamaInstr)
			if err != nil {
				t.Fatal(err)
			}
			reports, _ := bf16.Places().Reports(ws, llamaInstr)
			testenv.WriteFile(t, filepath.Join(reports, "report.json"), `{"tool": "phase0"}`)
		}},
		{"the Python environment", "python environment", func(t *testing.T) {
			pys := testenv.Pythons(t)
			if len(pys) < 2 {
				t.Skip("no second interpreter (PHASE0_TEST_PYTHONS)")
			}
			s.Python = pys[1]
		}},
	} {
		t.Run(c.input, func(t *testing.T) {
			c.change(t)
			cur, detail := stamp(t)
			if cur == nil { // could not be stamped: never reused, and the stage says why
				if !strings.Contains(detail, c.want) {
					t.Errorf("after a change to %s: %s, want it to name %q", c.input, detail, c.want)
				}
				return
			}
			why := reuse.Change(prev, cur)
			if why == "" || !strings.Contains(why, c.want) {
				t.Errorf("after a change to %s: reuse.Change says %q, want it to name %q", c.input, why, c.want)
			}
			prev = cur
		})
	}
	s.Python = testenv.Python(t)

	// The modules the folder's code imports from the tree are among the
	// worker's sources, restamped by reuse.Decide.
	var im wire.Imports
	var err error
	quantProbe(t, s, llamaInstr, "quant_weights", func(ctx context.Context, k *keyState) { im, err = k.core.Py().PythonSources(ctx) })
	if err != nil {
		t.Fatalf("python sources: %v", err)
	}
	sources := fingerprint.StampSources(im)
	for _, c := range []struct{ input, path string }{
		{"fused_decode", filepath.Join(filepath.Dir(llms), "fused_decode", "proj_qmm_pack.py")},
		{"the borrowed bf16 folder's weights module", borrowed},
	} {
		if why := fingerprint.SourcesChange(sources, sources.Restamp()); why != "" {
			t.Fatalf("unchanged sources: %s", why)
		}
		testenv.WriteFile(t, c.path, mustReadString(t, c.path)+"\n# edited\n")
		why := fingerprint.SourcesChange(sources, sources.Restamp())
		if !strings.Contains(why, filepath.Base(c.path)) {
			t.Errorf("after an edit to %s (%s): %q, want it named", c.input, c.path, why)
		}
		sources = sources.Restamp()
	}
}
