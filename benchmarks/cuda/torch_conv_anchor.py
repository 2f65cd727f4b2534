"""cuDNN anchor for qforge_bench_cuda's convolution section, measured in the same device run.

The anchor is cuDNN's float16 convolution, channels_last, cudnn.benchmark on: the layers of
benchmarks/cuda/bench_conv.cpp at batch 1 and 32. Float16 tensor cores have half the int8 peak
on Hopper, so an int8 kernel at parity with this anchor runs at half its instruction ceiling.
A second, int8 anchor is tried: PyTorch's experimental cuDNN quantized convolution
(quantized::conv2d_prepack / quantized::conv2d on CUDA qint8 tensors, channels_last), present
only in builds with cuDNN's frontend; where the build lacks it, the script prints why.
CUDA events, median of the timed runs after warm-up.
Run: python3 benchmarks/cuda/torch_conv_anchor.py
"""
import statistics

import torch


def median_ms(fn, warmup=5, reps=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def int8_conv_ms(x, w, k, groups):
    """PyTorch's cuDNN int8 convolution (qint8 X and W per tensor, requantized qint8 out)."""
    xq = torch.quantize_per_tensor(x.float().contiguous(memory_format=torch.channels_last), 0.02,
                                   0, torch.qint8)
    wq = torch.quantize_per_tensor(w.float().contiguous(memory_format=torch.channels_last), 0.01,
                                   0, torch.qint8)
    packed = torch.ops.quantized.conv2d_prepack(wq, None, [1, 1], [k // 2, k // 2], [1, 1], groups)
    return median_ms(lambda: torch.ops.quantized.conv2d(xq, packed, 0.05, 0))


def main():
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}")
    layers = [("resnet50 3x3 layer1", 64, 56, 64, 3, 1), ("resnet50 3x3 layer3", 256, 14, 256, 3, 1),
              ("resnet50 1x1 layer1 256->64", 256, 56, 64, 1, 1),
              ("mobilenet depthwise 3x3", 144, 56, 144, 3, 144)]
    for name, c, hw, o, k, groups in layers:
        for batch in (1, 32):
            x = torch.randn(batch, c, hw, hw, device=dev, dtype=torch.float16)
            x = x.to(memory_format=torch.channels_last)
            w = torch.randn(o, c // groups, k, k, device=dev, dtype=torch.float16)
            w = w.to(memory_format=torch.channels_last)
            ms = median_ms(lambda: torch.nn.functional.conv2d(x, w, padding=k // 2, groups=groups))
            macs = batch * hw * hw * o * (c // groups) * k * k
            print(f"  cuDNN f16 {name:30s} {batch}x{c}x{hw}^2 o{o}: {ms:.4f} ms "
                  f"{2 * macs / ms / 1e9:.1f} TFLOPS")
            try:
                q_ms = int8_conv_ms(x, w, k, groups)
                print(f"  cuDNN s8  {name:30s} {batch}x{c}x{hw}^2 o{o}: {q_ms:.4f} ms "
                      f"{2 * macs / q_ms / 1e9:.1f} TOPS")
            except Exception as err:  # the build or cuDNN refuses the shape: say why
                print(f"  cuDNN s8  {name:30s} {batch}x{c}x{hw}^2 o{o}: unavailable "
                      f"({type(err).__name__}: {str(err).splitlines()[0][:160]})")


if __name__ == "__main__":
    main()
