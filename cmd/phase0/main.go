// Command phase0 runs Phase 0 of bringing a HuggingFace decoder-only LLM up on AMD NPU2.
package main

func main() {}
