# Test fixture for phase0: the lines of an inference driver phase0 reads (as text).

"""Qwen3-0.6B end-to-end inference on NPU2 (fixture: no NPU code)."""

MODEL_CHOICES = {"base": "Qwen/Qwen3-0.6B", "instruct": "Qwen/Qwen3-0.6B"}


def main():
    print(f"would run {MODEL_CHOICES['instruct']}; type '/quit' or '/exit' to leave")


if __name__ == "__main__":
    main()
