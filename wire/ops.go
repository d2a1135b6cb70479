package wire

import "reflect"

// The ops, by their Python names (the functions of phase0_shim.ops).
const (
	OpEnvironment     = "environment"
	OpDownload        = "download"
	OpDefaultModel    = "default_model"
	OpLoaderFacts     = "loader_facts"
	OpConfigFacts     = "config_facts"
	OpModuleConfig    = "module_config"
	OpBehaviourFacts  = "behaviour_facts"
	OpBaseline        = "baseline"
	OpReferencePlan   = "reference_plan"
	OpPromptTokens    = "prompt_tokens"
	OpRecordReference = "record_reference"
	OpPythonSources   = "python_sources"
	OpResetSession    = "reset_session"
	OpQuantFacts      = "quant_facts"
	OpQuantModule     = "quant_module_facts"
	OpQuantE2E        = "quant_e2e"
	OpQuantFamily     = "quant_family_facts"
)

// Op is one op and the types of its two JSON objects.
type Op struct {
	Name         string
	Args, Result reflect.Type
}

// Ops are every op the worker exposes, in the order optypes.py declares
// their classes.
var Ops = []Op{
	{OpEnvironment, reflect.TypeFor[NoArgs](), reflect.TypeFor[Environment]()},
	{OpDownload, reflect.TypeFor[DownloadArgs](), reflect.TypeFor[DownloadReport]()},
	{OpDefaultModel, reflect.TypeFor[DefaultModelArgs](), reflect.TypeFor[DefaultModelResult]()},
	{OpPythonSources, reflect.TypeFor[NoArgs](), reflect.TypeFor[Imports]()},
	{OpResetSession, reflect.TypeFor[NoArgs](), reflect.TypeFor[ResetResult]()},
	{OpLoaderFacts, reflect.TypeFor[ModuleArgs](), reflect.TypeFor[LoaderFactsResult]()},
	{OpConfigFacts, reflect.TypeFor[ModuleArgs](), reflect.TypeFor[ConfigFactsResult]()},
	{OpModuleConfig, reflect.TypeFor[ModuleConfigArgs](), reflect.TypeFor[ModuleConfigResult]()},
	{OpBehaviourFacts, reflect.TypeFor[BehaviourArgs](), reflect.TypeFor[BehaviourFacts]()},
	{OpBaseline, reflect.TypeFor[BaselineArgs](), reflect.TypeFor[BaselineResult]()},
	{OpReferencePlan, reflect.TypeFor[BaselineArgs](), reflect.TypeFor[ReferencePlan]()},
	{OpPromptTokens, reflect.TypeFor[BaselineArgs](), reflect.TypeFor[PromptTokens]()},
	{OpRecordReference, reflect.TypeFor[RecordReferenceArgs](), reflect.TypeFor[NoResult]()},
	{OpQuantFacts, reflect.TypeFor[QuantArgs](), reflect.TypeFor[QuantFactsResult]()},
	{OpQuantModule, reflect.TypeFor[QuantModuleArgs](), reflect.TypeFor[QuantModuleFacts]()},
	{OpQuantE2E, reflect.TypeFor[QuantE2EOnlyArgs](), reflect.TypeFor[QuantE2EFacts]()},
	{OpQuantFamily, reflect.TypeFor[QuantFamilyArgs](), reflect.TypeFor[QuantFamilyFacts]()},
}
