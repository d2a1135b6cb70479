# Test fixture for phase0: the lines of an inference driver phase0 reads (as text).

"""Llama-3.2-1B end-to-end inference on NPU2 (fixture: no NPU code)."""

import argparse


def main():
    parser = argparse.ArgumentParser(description="Llama-3.2-1B inference")
    parser.add_argument("--instruct", action="store_true")
    args = parser.parse_args()
    model_name = (
        "meta-llama/Llama-3.2-1B-Instruct"
        if args.instruct
        else "meta-llama/Llama-3.2-1B"
    )
    print(f"would run {model_name}; type '/quit' or '/exit' to leave")


if __name__ == "__main__":
    main()
