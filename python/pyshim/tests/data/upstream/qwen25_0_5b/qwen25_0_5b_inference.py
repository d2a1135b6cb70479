# Test fixture for phase0: the lines of an inference driver phase0 reads (as text).

"""Qwen2.5-0.5B end-to-end inference on NPU2 (fixture: no NPU code)."""

MODEL_CHOICES = {"base": "Qwen/Qwen2.5-0.5B", "instruct": "Qwen/Qwen2.5-0.5B-Instruct"}


def main():
    print(f"would run {MODEL_CHOICES['instruct']}; type '/quit' or '/exit' to leave")


if __name__ == "__main__":
    main()
