"""The paper's MNIST program: softmax regression trained by gradient descent.

Everything below the data loading is the program from the TensorFlow paper's lecture
notes, unchanged except for the line that imports TensorFlow.

    python examples/mnist_softmax.py                 # bundled handwritten digits
    python examples/mnist_softmax.py --data MNIST_data   # MNIST IDX files, if you have them
"""

import argparse

import tensorweave.compat.v1 as tf  # was: import tensorflow as tf
from tensorweave.datasets import mnist as input_data

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--data", default=None, help="directory with the MNIST IDX files")
parser.add_argument("--steps", type=int, default=1000)
args = parser.parse_args()

mnist = input_data.read_data_sets(args.data, one_hot=True)
print("data:", mnist.source)

# ---- the paper's program ---------------------------------------------------------------
x = tf.placeholder(tf.float32, [None, 784])

w = tf.Variable(tf.zeros([784, 10]))
b = tf.Variable(tf.zeros([10]))

y = tf.nn.softmax(tf.matmul(x, w) + b)
y_ = tf.placeholder(tf.float32, [None, 10])
cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), reduction_indices=[1]))
train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
init = tf.initialize_all_variables()
sess = tf.Session()
sess.run(init)

for i in range(args.steps):
    batch_xs, batch_ys = mnist.train.next_batch(100)
    sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})
    if i % 100 == 0:
        print(f"step {i:4d}  loss {sess.run(cross_entropy, feed_dict={x: batch_xs, y_: batch_ys}):.4f}")

correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))

accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))

print("test accuracy:", sess.run(accuracy, feed_dict={x: mnist.test.images, y_: mnist.test.labels}))
