"""Record layouts of msprof's raw data, shared by the writer (``collect``) and the reader (``parse``).

One module per record kind, each with its numpy structured ``DTYPE`` (packed, little-endian,
byte-exact with msprof's C structs) and the file tag it lives in:

- host: :mod:`api_event` (40 B), :mod:`task_track`, :mod:`node_basic_info`, :mod:`memcpy_info`,
  :mod:`hccl_op_info` (64 B compact), :mod:`tensor_info`, :mod:`context_id_info`,
  :mod:`graph_id_map`, :mod:`fusion_op_info`, :mod:`hccl_info` (256 B additional),
  :mod:`hash_dic` (text dictionaries)
- device: :mod:`stars_soc` (64 B ACSQ logs), :mod:`ts_track` (40 B step trace / flip / task type)
- :mod:`files` (naming, slices) and :mod:`metadata` (info.json, start logs, ...)
"""
