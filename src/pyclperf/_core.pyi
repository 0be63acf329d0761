# Type stubs of the extension module (generated with pybind11-stubgen, then corrected by hand:
# the generator mistook the core's Buffer for typing_extensions.Buffer). Regenerate after
# changing a binding. Sizes, offsets, counts and indices take a Python int or a NumPy integer
# (`Size` below): the bindings refuse floats and bools with TypeError naming the argument.
"""
pyclperf's C++ core over OpenCL (private: use the pyclperf package)
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
import typing_extensions
Size: typing.TypeAlias = typing.Union[int, numpy.integer]
Sizes: typing.TypeAlias = typing.Union[Size, collections.abc.Iterable[Size]]
__all__: list[str] = ['ArgInfo', 'Buffer', 'BuildError', 'ClError', 'Context', 'DeviceInfo', 'DeviceLimitError', 'DeviceMemoryError', 'FencedBuffer', 'Image', 'InvalidArgumentError', 'Kernel', 'KernelLimits', 'PeerPair', 'PinnedBuffer', 'Program', 'PyclperfError', 'ReleasedError', 'Sampler', 'compose_options', 'error_name', 'list_devices', 'record_faults', 'run', 'time_durations', 'time_events', 'time_host', 'validate_launch']
class PyclperfError(Exception):
    """
    Base of every error pyclperf raises.
    """
class ClError(PyclperfError, RuntimeError):
    """
    An OpenCL call failed; .call, .code and .name say which and how.
    """
    call: str
    code: int
    name: str
class BuildError(ClError):
    """
    A program failed to build; .log holds the device's build log and .options the options used.
    """
    log: str
    options: str
class DeviceMemoryError(ClError, MemoryError):
    """
    The device or host ran out of memory or resources.
    """
class InvalidArgumentError(PyclperfError, ValueError):
    """
    A request that cannot work, refused before anything ran.
    """
class DeviceLimitError(InvalidArgumentError):
    """
    A request beyond what the device reports it can take (a work-group or an image larger than its limits).
    """
class ReleasedError(PyclperfError, RuntimeError):
    """
    An object was used after release(), or a mapping after unmap().
    """
class DeviceInfo:
    """
    Properties of one OpenCL device (a snapshot).
    """
    def __repr__(self) -> str:
        ...
    def has_extension(self, name: str) -> bool:
        ...
    @property
    def address_bits(self) -> int:
        ...
    @property
    def compute_units(self) -> int:
        ...
    @property
    def constant_mem_bytes(self) -> int:
        ...
    @property
    def device_index(self) -> int:
        ...
    @property
    def driver_version(self) -> str:
        ...
    @property
    def extensions(self) -> str:
        ...
    @property
    def global_mem_bytes(self) -> int:
        ...
    @property
    def global_mem_cache_bytes(self) -> int:
        ...
    @property
    def global_mem_cacheline_bytes(self) -> int:
        ...
    @property
    def host_unified_memory(self) -> bool:
        ...
    @property
    def image_support(self) -> bool:
        ...
    @property
    def image2d_max_height(self) -> int:
        ...
    @property
    def image2d_max_width(self) -> int:
        ...
    @property
    def is_gpu(self) -> bool:
        ...
    @property
    def local_mem_bytes(self) -> int:
        ...
    @property
    def local_mem_is_dedicated(self) -> bool:
        ...
    @property
    def max_alloc_bytes(self) -> int:
        ...
    @property
    def max_clock_mhz(self) -> int:
        ...
    @property
    def max_work_group_size(self) -> int:
        ...
    @property
    def max_work_item_sizes(self) -> list[int]:
        ...
    @property
    def mem_base_addr_align_bits(self) -> int:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def nv_compute_capability_major(self) -> int:
        ...
    @property
    def nv_compute_capability_minor(self) -> int:
        ...
    @property
    def nv_registers_per_block(self) -> int:
        ...
    @property
    def nv_warp_size(self) -> int:
        ...
    @property
    def opencl_c_all_versions(self) -> list[str]:
        ...
    @property
    def opencl_c_features(self) -> list[str]:
        ...
    @property
    def opencl_c_version(self) -> str:
        ...
    @property
    def platform_index(self) -> int:
        ...
    @property
    def platform_name(self) -> str:
        ...
    @property
    def platform_version(self) -> str:
        ...
    @property
    def profiling_timer_resolution_ns(self) -> int:
        ...
    @property
    def type(self) -> str:
        ...
    @property
    def vendor(self) -> str:
        ...
    @property
    def version(self) -> str:
        ...
class Context:
    """
    A device with its context and in-order profiling queue.
    """
    def __init__(self, platform_index: typing.SupportsInt | typing.SupportsIndex, device_index: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def finish(self) -> None:
        """
        Wait until everything enqueued has completed.
        """
    @property
    def info(self) -> DeviceInfo:
        ...
class PeerPair:
    """
    Two devices of one platform in one context, a queue and a buffer each.
    """
    def __init__(self, platform_index: typing.SupportsInt | typing.SupportsIndex, device_a: typing.SupportsInt | typing.SupportsIndex, device_b: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def info(self, side: typing.SupportsInt | typing.SupportsIndex) -> DeviceInfo:
        ...
    def allocate(self, nbytes: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def write(self, side: typing.SupportsInt | typing.SupportsIndex, array: numpy.ndarray) -> None:
        ...
    def read(self, side: typing.SupportsInt | typing.SupportsIndex, array: numpy.ndarray) -> None:
        ...
    def fill(self, side: typing.SupportsInt | typing.SupportsIndex, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def build_copy_kernel(self, source: str, name: str, element_bytes: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def time_copy(self, source_side: typing.SupportsInt | typing.SupportsIndex, warmup: typing.SupportsInt | typing.SupportsIndex = 1, repeats: typing.SupportsInt | typing.SupportsIndex = 10) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64]]:
        ...
    def time_migrate(self, source_side: typing.SupportsInt | typing.SupportsIndex, warmup: typing.SupportsInt | typing.SupportsIndex = 1, repeats: typing.SupportsInt | typing.SupportsIndex = 10) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64]]:
        ...
    def time_kernel_copy(self, source_side: typing.SupportsInt | typing.SupportsIndex, local: typing.SupportsInt | typing.SupportsIndex, groups: typing.SupportsInt | typing.SupportsIndex, warmup: typing.SupportsInt | typing.SupportsIndex = 1, repeats: typing.SupportsInt | typing.SupportsIndex = 10) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64]]:
        ...
    @property
    def nbytes(self) -> int:
        ...
    @property
    def same_device(self) -> bool:
        ...
class Buffer:
    """
    Device memory (CL_MEM_READ_WRITE).
    """
    def __init__(self, context: Context, nbytes: Size) -> None:
        ...
    def copy_from(self, src: Buffer, nbytes: Size, src_offset: Size = 0, dst_offset: Size = 0) -> None:
        ...
    def fill(self, pattern: numpy.ndarray) -> None:
        """
        Repeat a 1..128-byte pattern (power of two) over the buffer.
        """
    def read(self, dst: numpy.ndarray, offset: Size = 0) -> None:
        """
        Fill a C-contiguous writable array of plain numbers from the buffer at byte `offset` (blocking); an array in the other byte order than the host's receives the same numbers, converted.
        """
    def release(self) -> None:
        """
        Give the memory back now; later use raises.
        """
    def write(self, src: numpy.ndarray, offset: Size = 0) -> None:
        """
        Copy a C-contiguous array of plain numbers into the buffer at byte `offset` (blocking); an array in the other byte order than the host's goes as its numbers, converted.
        """
    @property
    def context(self) -> Context:
        ...
    @property
    def nbytes(self) -> int:
        ...
    @property
    def released(self) -> bool:
        ...
class FencedBuffer(Buffer):
    """
    Host memory of its own (CL_MEM_USE_HOST_PTR) between two inaccessible reservations of `fence` bytes each (address space only, nothing committed). On a device whose memory is the host's (a CPU device), a kernel's write past either end within `fence` bytes faults instead of landing in other memory of the process.
    """
    def __init__(self, context: Context, nbytes: Size, fence: Size) -> None:
        ...
    @property
    def address(self) -> int:
        """
        Where the buffer's first byte lies in this process's memory.
        """
    @property
    def fence(self) -> int:
        """
        Inaccessible bytes on either side (whole pages).
        """
class PinnedBuffer(Buffer):
    """
    Host memory the device can reach directly (CL_MEM_ALLOC_HOST_PTR), kept mapped.
    """
    def __init__(self, context: Context, nbytes: Size) -> None:
        ...
    def array(self, dtype: typing.Any = 'uint8', shape: Sizes | None = None) -> numpy.ndarray:
        """
        A zero-copy NumPy view of the mapping; it keeps the buffer and mapping alive. The dtype must be plain numbers (no objects, strings or dates) in the host's byte order: the view shows the bytes the device reads and writes.
        """
    def map(self, writable: bool = True) -> None:
        ...
    def unmap(self) -> None:
        ...
    @property
    def mapped(self) -> bool:
        ...
    @property
    def views(self) -> int:
        """
        How many NumPy views of the mapping are alive.
        """
    @property
    def writable(self) -> bool:
        ...
class Image:
    """
    A 2-D image of float32 texels with 1 (CL_R) or 4 (CL_RGBA) channels, read by kernels through a sampler.
    """
    def __init__(self, context: Context, width: Size, height: Size, channels: Size = 1, half: bool = False) -> None:
        ...
    def __repr__(self) -> str:
        ...
    def read(self, dst: numpy.ndarray) -> None:
        """
        Fill a C-contiguous writable float32 (float16 for a half image) array of the image's shape from it (blocking).
        """
    def release(self) -> None:
        """
        Give the memory back now; later use raises.
        """
    def write(self, src: numpy.ndarray) -> None:
        """
        Copy a C-contiguous float32 (float16 for a half image) array of the image's shape into it (blocking).
        """
    @property
    def channels(self) -> int:
        ...
    @property
    def context(self) -> Context:
        ...
    @property
    def half(self) -> bool:
        """
        Whether the texels are CL_HALF_FLOAT (float16) rather than CL_FLOAT.
        """
    @property
    def height(self) -> int:
        ...
    @property
    def nbytes(self) -> int:
        ...
    @property
    def released(self) -> bool:
        ...
    @property
    def shape(self) -> tuple[int, ...]:
        """
        The NumPy shape of its texels: (height, width) or (height, width, 4).
        """
    @property
    def width(self) -> int:
        ...
class Sampler:
    """
    How read_imagef maps coordinates to texels: normalized or texel coordinates, addressing ('none', 'clamp_to_edge', 'clamp', 'repeat', 'mirrored_repeat') and filter ('nearest', 'linear').
    """
    addressing_modes: typing.ClassVar[list[str]]
    filter_modes: typing.ClassVar[list[str]]
    def __init__(self, context: Context, normalized: bool = False, addressing: str = 'clamp_to_edge', filter: str = 'nearest') -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def addressing(self) -> str:
        ...
    @property
    def context(self) -> Context:
        ...
    @property
    def filter(self) -> str:
        ...
    @property
    def normalized(self) -> bool:
        ...
class Program:
    """
    OpenCL C source built for one context.
    """
    def __init__(self, context: Context, source: str, defines: collections.abc.Sequence[tuple[str, str]] = [], options: str = '') -> None:
        ...
    @property
    def build_log(self) -> str:
        ...
    @property
    def context(self) -> Context:
        ...
    @property
    def kernel_names(self) -> list[str]:
        ...
    @property
    def options(self) -> str:
        ...
class ArgInfo:
    """
    A kernel parameter as declared in the source.
    """
    def __repr__(self) -> str:
        ...
    @property
    def address_qualifier(self) -> str:
        ...
    @property
    def is_const(self) -> bool:
        ...
    @property
    def is_image(self) -> bool:
        ...
    @property
    def is_pointer(self) -> bool:
        ...
    @property
    def is_sampler(self) -> bool:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def type_name(self) -> str:
        ...
class KernelLimits:
    """
    A kernel's work-group limits on its device.
    """
    @property
    def compile_work_group_size(self) -> list[int]:
        ...
    @property
    def local_mem_bytes(self) -> int:
        ...
    @property
    def preferred_multiple(self) -> int:
        ...
    @property
    def private_mem_bytes(self) -> int:
        ...
    @property
    def work_group_size(self) -> int:
        ...
class PendingDurations:
    """
    Timed launches enqueued by begin_durations, not yet waited for.
    """
    def finish(self) -> numpy.typing.NDArray[numpy.float64]:
        """
        Wait for the launches once and return end - start of each timed one (ns), as time_durations does; later calls return the same.
        """
class Kernel:
    """
    One kernel of a Program, with its arguments.
    """
    def __init__(self, program: Program, name: str) -> None:
        ...
    def check_ready(self) -> None:
        """
        Raise unless every argument is set (InvalidArgumentError naming the unset ones) and no buffer or image argument is released (ReleasedError). This is all a launch can know: nothing checks how far the kernel indexes its buffers.
        """
    def forget_args(self) -> None:
        """
        Mark every argument unset (their values stay bound): launches refuse until each is set again. Kernel.set_args calls it when one of its arguments is refused, so that a mix of the old and the new arguments never runs.
        """
    def limits(self) -> KernelLimits:
        ...
    def set_buffer(self, index: Size, buffer: Buffer) -> None:
        ...
    def set_image(self, index: Size, image: Image) -> None:
        ...
    def set_local(self, index: Size, nbytes: Size) -> None:
        ...
    def set_sampler(self, index: Size, sampler: Sampler) -> None:
        ...
    def set_scalar(self, index: Size, value: typing_extensions.Buffer | numpy.generic | numpy.ndarray) -> None:
        """
        Set a by-value argument from a NumPy scalar or packed array of plain numbers (its bytes, in the host's byte order: a value in the other order is converted).
        """
    @property
    def args(self) -> list[ArgInfo]:
        ...
    @property
    def context(self) -> Context:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def num_args(self) -> int:
        ...
def compose_options(defines: collections.abc.Sequence[tuple[str, str]], options: str) -> str:
    """
    The option string a Program passes to clBuildProgram.
    """
def error_name(code: typing.SupportsInt | typing.SupportsIndex) -> str:
    """
    The CL_* name of an OpenCL status code.
    """
def list_devices() -> list[DeviceInfo]:
    """
    Every device of every OpenCL platform; empty when no platform is installed.
    """
def record_faults(fd: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    From now on a SIGSEGV or SIGBUS in this process first writes 'fault <signal> <address in hex> <w, r or ?>' (a write, a read, not known) and a newline to file descriptor `fd`, then ends the process as it would have. For a worker process whose death someone else explains.
    """
def run(kernel: Kernel, global_size: Sizes, local_size: Sizes | None = None) -> None:
    """
    Launch once and wait. Checked first: the range against the device's limits, every argument set, no argument released. Not checked, because no launch can know it: how far the kernel indexes its buffers. A kernel that reads or writes past a buffer's end corrupts whatever memory lies there (on a CPU device, this process's heap). pyclperf.run_kernel and pyclperf.tune place arrays in padded, guarded buffers instead.
    """
def time_events(kernel: Kernel, global_size: Sizes, local_size: Sizes | None, warmup: Size, repeats: Size) -> numpy.typing.NDArray[numpy.uint64]:
    """
    Warm up, then time `repeats` launches by event profiling: (repeats, 4) uint64 array of queued, submit, start, end in ns.
    """
def time_durations(kernel: Kernel, global_size: Sizes, local_size: Sizes | None, warmup: Size, repeats: Size) -> numpy.typing.NDArray[numpy.float64]:
    """
    Warm up, then time `repeats` launches by event profiling: float64 array of end - start in ns (only those two timestamps are read).
    """
def begin_durations(kernel: Kernel, global_size: Sizes, local_size: Sizes | None, warmup: Size, repeats: Size) -> PendingDurations:
    """
    time_durations in two halves: enqueue the warm-ups and timed launches now and return a PendingDurations whose finish() waits and gives the times; the host is free between.
    """
def time_host(kernel: Kernel, global_size: Sizes, local_size: Sizes | None, warmup: Size, repeats: Size) -> list[float]:
    """
    Warm up, then time `repeats` launches each by a host steady clock around enqueue and finish: list of ns.
    """
def validate_launch(kernel: Kernel, global_size: Sizes, local_size: Sizes | None = None) -> None:
    """
    Raise InvalidArgumentError if this launch cannot work on the kernel's device.
    """
def time_copy(src: Buffer, dst: Buffer, nbytes: typing.SupportsInt | typing.SupportsIndex, method: str = 'events', warmup: typing.SupportsInt | typing.SupportsIndex = 3, repeats: typing.SupportsInt | typing.SupportsIndex = 20) -> numpy.typing.NDArray[numpy.float64]:
    """
    Time `repeats` device-to-device copies (enqueueCopyBuffer) of `nbytes` from src to dst. Returns each repeat's time in ns.
    """

def time_transfer(direction: str, device: Buffer, host: typing.Any, nbytes: typing.SupportsInt | typing.SupportsIndex, access: str = 'direct', pieces: typing.SupportsInt | typing.SupportsIndex = 1, method: str = 'events', warmup: typing.SupportsInt | typing.SupportsIndex = 3, repeats: typing.SupportsInt | typing.SupportsIndex = 20) -> numpy.typing.NDArray[numpy.float64]:
    """
    Time `repeats` transfers of `nbytes` between byte 0 of a device Buffer and byte 0 of host memory (a C-contiguous NumPy array or a PinnedBuffer), each as `pieces` equal pieces; direction 'h2d' or 'd2h', access 'direct' or 'mapped', method 'events' or 'host'. Returns each repeat's time in ns.
    """
