// Package ops is the typed boundary between Go and the Python worker: one
// method per entry point of phase0_shim.ops, each over its argument and
// result types of package wire (the op contract). Results are decoded
// strictly: an unknown key or a missing required one is an ErrContract
// naming the op and the key, so a key renamed on one side never becomes a
// silent zero value on the other. Nothing else in phase0 calls an op.
package ops

import (
	"context"
	"encoding/json"
	"fmt"

	"phase0/gate/config"
	"phase0/wire"
)

// Module is the Python module whose functions are the ops.
const Module = "phase0_shim.ops"

// Session runs one op at a time in a worker child (*worker.Session).
type Session interface {
	Call(op string, args, out any) ([]float32, error)
	Close() error
}

// Client runs ops in one session, started on first use.
type Client struct {
	start func(context.Context) (Session, error)
	sess  Session
}

// New returns a client that starts its session with start when the first
// op runs.
func New(start func(context.Context) (Session, error)) *Client {
	return &Client{start: start}
}

// Started says whether an op has started the session.
func (c *Client) Started() bool { return c.sess != nil }

// Close ends the session, if one was started; the next op starts another.
func (c *Client) Close() error {
	if c.sess == nil {
		return nil
	}
	err := c.sess.Close()
	c.sess = nil
	return err
}

// call runs op with args and decodes its result strictly into out. Worker
// errors (*worker.Error) come back unwrapped, for the caller to sort.
func call[R any](ctx context.Context, c *Client, op string, args any) (R, []float32, error) {
	var out R
	if c.sess == nil {
		sess, err := c.start(ctx)
		if err != nil {
			return out, nil, err
		}
		c.sess = sess
	}
	var raw json.RawMessage
	floats, err := c.sess.Call(op, args, &raw)
	if err != nil {
		return out, nil, err
	}
	if err := decodeStrict(op, raw, &out); err != nil {
		return out, nil, err
	}
	return out, floats, nil
}

// Environment reports the versions the worker runs on; a liveness check too.
func (c *Client) Environment(ctx context.Context) (wire.Environment, error) {
	r, _, err := call[wire.Environment](ctx, c, wire.OpEnvironment, wire.NoArgs{})
	return r, err
}

// Download fetches a hub model's config, tokenizer and safetensors into the
// HF cache through huggingface_hub.
func (c *Client) Download(ctx context.Context, args wire.DownloadArgs) (wire.DownloadReport, error) {
	r, _, err := call[wire.DownloadReport](ctx, c, wire.OpDownload, args)
	return r, err
}

// DefaultModel converts (once) the bundled default model into the cache.
func (c *Client) DefaultModel(ctx context.Context, args wire.DefaultModelArgs) (wire.DefaultModelResult, error) {
	r, _, err := call[wire.DefaultModelResult](ctx, c, wire.OpDefaultModel, args)
	return r, err
}

// LoaderFacts runs the module's load_weights on the checkpoint (gate 1).
func (c *Client) LoaderFacts(ctx context.Context, args wire.ModuleArgs) (wire.LoaderFactsResult, error) {
	r, _, err := call[wire.LoaderFactsResult](ctx, c, wire.OpLoaderFacts, args)
	return r, err
}

// QuantFacts runs a quantized folder's own loader and reports every
// tensor's statistics against the source checkpoint (quantized gate 1).
func (c *Client) QuantFacts(ctx context.Context, args wire.QuantArgs) (wire.QuantFactsResult, error) {
	r, _, err := call[wire.QuantFactsResult](ctx, c, wire.OpQuantFacts, args)
	return r, err
}

// QuantE2E is quantized gate 2 without the bf16 baseline (reused from its
// record): one model load, the dequantized projections patched in.
func (c *Client) QuantE2E(ctx context.Context, args wire.QuantE2EOnlyArgs) (wire.QuantE2EFacts, error) {
	r, _, err := call[wire.QuantE2EFacts](ctx, c, wire.OpQuantE2E, args)
	return r, err
}

// QuantModuleFacts imports a quantized module and calls its *_config()
// functions (quantized gate 3).
func (c *Client) QuantModuleFacts(ctx context.Context, args wire.QuantModuleArgs) (wire.QuantModuleFacts, error) {
	r, _, err := call[wire.QuantModuleFacts](ctx, c, wire.OpQuantModule, args)
	return r, err
}

// QuantFamilyFacts imports a deployed family's quantized module (Gemma 3,
// Phi-3) and reports its constants, its global layers and its RoPE tables
// against transformers' (quantized gate 3).
func (c *Client) QuantFamilyFacts(ctx context.Context, args wire.QuantFamilyArgs) (wire.QuantFamilyFacts, error) {
	r, _, err := call[wire.QuantFamilyFacts](ctx, c, wire.OpQuantFamily, args)
	return r, err
}

// ConfigFacts reports the module's LlamaConfig() and what transformers
// resolves for the folder (gate 3).
func (c *Client) ConfigFacts(ctx context.Context, args wire.ModuleArgs) (wire.ConfigFactsResult, error) {
	r, _, err := call[wire.ConfigFactsResult](ctx, c, wire.OpConfigFacts, args)
	return r, err
}

// ModuleConfig imports a weights module and reports its LlamaConfig().
func (c *Client) ModuleConfig(ctx context.Context, args wire.ModuleConfigArgs) (wire.ModuleConfigResult, error) {
	r, _, err := call[wire.ModuleConfigResult](ctx, c, wire.OpModuleConfig, args)
	return r, err
}

// BehaviourFacts runs the module's RoPE table and its helpers' RMSNorm next
// to transformers' (gate 3), with the arrays split out of the payload.
func (c *Client) BehaviourFacts(ctx context.Context, args wire.BehaviourArgs) (*config.Behaviour, error) {
	raw, payload, err := call[json.RawMessage](ctx, c, wire.OpBehaviourFacts, args)
	if err != nil {
		return nil, err
	}
	var checked wire.BehaviourFacts
	if err := decodeStrict(wire.OpBehaviourFacts, raw, &checked); err != nil {
		return nil, err
	}
	b, err := config.DecodeBehaviour(raw, payload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", wire.OpBehaviourFacts, err)
	}
	return b, nil
}

// Baseline prefills the canonical prompt through the reference HfRunner in
// bf16 and returns its facts and the last position's logits (gate 2).
func (c *Client) Baseline(ctx context.Context, args wire.BaselineArgs) (wire.BaselineResult, []float32, error) {
	return call[wire.BaselineResult](ctx, c, wire.OpBaseline, args)
}

// ReferencePlan reports what a recording would be keyed on, without torch.
func (c *Client) ReferencePlan(ctx context.Context, args wire.BaselineArgs) (wire.ReferencePlan, error) {
	r, _, err := call[wire.ReferencePlan](ctx, c, wire.OpReferencePlan, args)
	return r, err
}

// PromptTokens counts the canonical prompt's tokens with the model's
// tokenizer, without loading the model: the fact gate 2's prompt is judged
// on against max_seq before the model loads.
func (c *Client) PromptTokens(ctx context.Context, args wire.BaselineArgs) (wire.PromptTokens, error) {
	r, _, err := call[wire.PromptTokens](ctx, c, wire.OpPromptTokens, args)
	return r, err
}

// RecordReference records the reference into args.OutDir, which the caller
// reads back.
func (c *Client) RecordReference(ctx context.Context, args wire.RecordReferenceArgs) error {
	_, _, err := call[wire.NoResult](ctx, c, wire.OpRecordReference, args)
	return err
}

// PythonSources lists the Python the session has imported so far.
func (c *Client) PythonSources(ctx context.Context) (wire.Imports, error) {
	r, _, err := call[wire.Imports](ctx, c, wire.OpPythonSources, wire.NoArgs{})
	return r, err
}

// ResetSession returns the session to the state it started in: the modules
// imported from outside the interpreter's own folders are forgotten and
// sys.path is restored (for a session that serves another run next).
func (c *Client) ResetSession(ctx context.Context) (wire.ResetResult, error) {
	r, _, err := call[wire.ResetResult](ctx, c, wire.OpResetSession, wire.NoArgs{})
	return r, err
}
