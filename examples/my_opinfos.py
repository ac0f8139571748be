"""A plugin file: OpInfos for your own ops, checked like the built-in registry.

    adcheck ops my_sin --plugin my_opinfos.py
    adcheck check --plugin my_opinfos.py
"""
import adcheck.refengine as E
from adcheck.opinfo import OpInfo
from adcheck.opinfo.samples import unary

from myops import MySin, MyTanh

OPINFOS = [
    OpInfo("my_sin", MySin.apply, family="mine", dtypes=(E.float64,),
           sample_func=unary(shapes=((3,),)), supports_forward_ad=False,
           supports_gradgrad=False, supports_fwgrad_bwgrad=False),
    OpInfo("my_tanh", MyTanh.apply, family="mine", dtypes=(E.float64,),
           sample_func=unary(shapes=((3,), (2, 2))), supports_gradgrad=False,
           supports_fwgrad_bwgrad=False),
]
