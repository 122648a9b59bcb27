# measure-graph-h200.py - the exact script behind llmsim-h200-2026-11-29-
# graph.json, as it ran (compact so that it fitted one device command).
#
# Run once, 2026-11-29, on a lent NVIDIA H200 SXM (700 W limit), PyTorch
# 2.11.0+cu130: python3 measure-graph-h200.py OUT.json
#
# What it does, in order:
#   smi      3 s of back-to-back bf16 8192^3 GEMMs while nvidia-smi samples
#            the SM clock and power every 100 ms (the clock under sustained
#            GEMM load);
#   copyM    a device copy of M MiB (working set 2M MiB), captured R times
#            in a CUDA graph, best of 5 replays: s per copy;
#   gM_N_K   bf16 torch.matmul into a preallocated C[M,N], same method;
#   aB_H_S_C cuDNN SDPA attention, batch B, H heads, seq S, head dim 128,
#            causal C: ...f forward (graph), ...b backward (autograd
#            replayed R times back to back between events; the kernels are
#            long enough to hide the host).
# In a graph each kernel follows the previous one with no host in between:
# what is measured is the GPU's own time plus its per-kernel floor.
import json,sys,time,subprocess as S,threading as T,torch,torch.nn.functional as F
D='cuda';E=torch.cuda.Event;Y=torch.cuda.synchronize;o={'dev':torch.cuda.get_device_name(0)}
def G(f,r):
 s=torch.cuda.Stream();s.wait_stream(torch.cuda.current_stream())
 with torch.cuda.stream(s):
  for _ in range(3):f()
 torch.cuda.current_stream().wait_stream(s);g=torch.cuda.CUDAGraph()
 with torch.cuda.graph(g):
  for _ in range(r):f()
 g.replay();Y();b=9
 for _ in range(5):
  a=E(enable_timing=1);c=E(enable_timing=1);a.record();g.replay();c.record();Y();b=min(b,a.elapsed_time(c)/1e3/r)
 return b
def L(f,r):
 for _ in range(3):f()
 Y();a=E(enable_timing=1);c=E(enable_timing=1);a.record()
 for _ in range(r):f()
 c.record();Y();return a.elapsed_time(c)/1e3/r
R=lambda t:int(max(4,min(200,.02/max(t,1e-6))))
def W(k,f,t):
 try:o[k]=G(f,R(t))
 except Exception as e:Y();o[k]=L(f,R(t));o[k+'_loop']=str(e)[:60]
sm=[];st=T.Event()
def P():
 while not st.is_set():sm.append(S.run(['nvidia-smi','--query-gpu=clocks.sm,power.draw','--format=csv,noheader,nounits'],capture_output=1,text=1).stdout.strip());time.sleep(.1)
a=torch.randn(8192,8192,device=D,dtype=torch.bfloat16);b=a.clone();c=a.clone();th=T.Thread(target=P);th.start();t0=time.time()
while time.time()-t0<3:
 for _ in range(20):torch.matmul(a,b,out=c)
 Y()
st.set();th.join();o['smi']=sm
for m in(1,2,4,8,16,24,32,48,64,128,1024,4096):
 x=torch.randn(m<<19,device=D,dtype=torch.bfloat16);y=torch.empty_like(x);W('copy%d'%m,lambda:y.copy_(x),m*2**21/4e12);del x,y
for m,n,k in((256,256,256),(512,512,512),(1024,1024,1024),(2048,2048,2048),(1024,2145,1024),(4096,4096,4096),(8192,8192,8192),(802816,192,768),(8192,6144,4096),(2048,8192,1280),(8192,1280,8192)):
 x=torch.randn(m,k,device=D,dtype=torch.bfloat16);y=torch.randn(k,n,device=D,dtype=torch.bfloat16);z=torch.empty(m,n,device=D,dtype=torch.bfloat16);W('g%d_%d_%d'%(m,n,k),lambda:torch.matmul(x,y,out=z),2*m*n*k/6e14);del x,y,z
from torch.nn.attention import SDPBackend as B,sdpa_kernel as K
for bb,h,s in((1,16,16384),(16,16,1024),(1,32,8192),(1,8,8192)):
 q=torch.randn(bb,h,s,128,device=D,dtype=torch.bfloat16,requires_grad=True);k=torch.randn_like(q,requires_grad=True);v=torch.randn_like(q,requires_grad=True)
 for cz in(1,0):
  t=4*bb*h*s*s*128/(2 if cz else 1)/5e14;n='a%d_%d_%d_%d'%(bb,h,s,cz)
  try:
   with K(B.CUDNN_ATTENTION):
    f=lambda:F.scaled_dot_product_attention(q,k,v,is_causal=bool(cz))
    with torch.no_grad():W(n+'f',f,t)
    u=f();g=torch.randn_like(u);o[n+'b']=L(lambda:torch.autograd.grad(u,(q,k,v),g,retain_graph=True),R(2.5*t))
  except Exception as e:o[n+'e']=str(e)[:80]
json.dump(o,open(sys.argv[1],'w'),indent=0)
